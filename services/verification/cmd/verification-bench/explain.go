package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// The plans are those of the service's own statements: the store's methods run here against the
// seeded database, a tracer records the SQL and arguments they send, and each is explained as sent.
// No query text is copied into the bench, so the plans cannot drift from the code.

type traced struct {
	sql  string
	args []any
}

// recorder is a pgx.QueryTracer that keeps the statements sent since the last take.
type recorder struct {
	mu   sync.Mutex
	sent []traced
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, traced{d.SQL, d.Args})
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *recorder) take() []traced {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

// explainCase is one store call whose statement is explained. With warm set, the cached plan is the
// one after five executions of warm's statement (the same statement with other arguments): the plan
// a pooled connection that served other requests brings to this one.
type explainCase struct {
	name string
	call func(ctx context.Context) error
	warm func(ctx context.Context) error
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	JoinType  string     `json:"Join Type"`
	Index     string     `json:"Index Name"`
	Relation  string     `json:"Relation Name"`
	Direction string     `json:"Scan Direction"`
	Rows      float64    `json:"Actual Rows"`
	Loops     float64    `json:"Actual Loops"`
	Hit       int64      `json:"Shared Hit Blocks"`
	Read      int64      `json:"Shared Read Blocks"`
	Plans     []planNode `json:"Plans"`
}

type explained struct {
	Plan          planNode `json:"Plan"`
	ExecutionTime float64  `json:"Execution Time"`
}

// shape renders a plan as a one-line tree: node (children), with the index of each index scan.
func (n planNode) shape() string {
	s := n.NodeType
	if n.JoinType != "" && n.JoinType != "Inner" {
		s = strings.Replace(s, "Nested Loop", "Nested Loop "+n.JoinType, 1)
	}
	if n.Direction == "Backward" {
		s += " Backward"
	}
	if n.Index != "" {
		s += " " + n.Index
	} else if n.Relation != "" {
		s += " on " + n.Relation
	}
	if len(n.Plans) > 0 {
		parts := make([]string, len(n.Plans))
		for i, c := range n.Plans {
			parts[i] = c.shape()
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// suspicious lists the nodes that would make a page cost grow with the table or the depth.
func (n planNode) suspicious() []string {
	var out []string
	switch n.NodeType {
	case "Seq Scan", "Sort", "Incremental Sort", "Bitmap Heap Scan", "Materialize", "Hash":
		out = append(out, n.NodeType)
	}
	for _, c := range n.Plans {
		out = append(out, c.suspicious()...)
	}
	return out
}

var offsetClause = regexp.MustCompile(`(?i)\bOFFSET\b`)

// sqlLiteral quotes an argument the tracer recorded (uuids, numbers, strings) as an untyped SQL
// literal, which EXECUTE coerces to the prepared statement's parameter type.
func sqlLiteral(v any) string {
	return "'" + strings.ReplaceAll(fmt.Sprint(v), "'", "''") + "'"
}

// explainPlan runs EXPLAIN ANALYZE of a traced statement prepared on conn. cached false explains
// the plan made for these arguments (force_custom_plan); cached true explains the sixth execution
// under the default plan_cache_mode, after five executions: the plan a pooled connection settles on,
// since pgx prepares and caches every statement and PostgreSQL may then switch to a generic plan.
func explainPlan(ctx context.Context, conn *pgx.Conn, t traced, cached bool, warm *traced) (explained, error) {
	var out explained
	execute := executeOf(t)
	setup := []string{"SET plan_cache_mode = force_custom_plan", "PREPARE bench_explain AS " + t.sql}
	if cached {
		before := execute
		if warm != nil {
			before = executeOf(*warm)
		}
		setup = []string{"SET plan_cache_mode = auto", "PREPARE bench_explain AS " + t.sql, before, before, before, before, before}
	}
	for _, s := range setup {
		if _, err := conn.Exec(ctx, s); err != nil {
			return out, fmt.Errorf("%s: %w", s, err)
		}
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "DEALLOCATE bench_explain") }()
	var raw []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+execute).Scan(&raw); err != nil {
		return out, err
	}
	var plans []explained
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		return out, fmt.Errorf("EXPLAIN answered %s: %v", raw, err)
	}
	return plans[0], nil
}

// executeOf is the EXECUTE of the prepared statement bench_explain with t's arguments.
func executeOf(t traced) string {
	args := make([]string, len(t.args))
	for i, a := range t.args {
		args[i] = sqlLiteral(a)
	}
	if len(args) == 0 {
		return "EXECUTE bench_explain"
	}
	return "EXECUTE bench_explain(" + strings.Join(args, ", ") + ")"
}

// explainReads explains the statements of the reads the bench measures, and of the other feeds, on
// the seeded database, and writes their plan shapes. It returns an error only when it could not run.
func explainReads(ctx context.Context, dbURL string, spec seedSpec, apiKey string, feedDeep, historyDeep string, out io.Writer) error {
	rec := &recorder{}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.ConnConfig.Tracer = rec
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	connCfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	// Simple protocol: the EXPLAIN statements are one-offs, not worth preparing.
	connCfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	reg := store.NewIntelligence(pool, events.Outbox{})
	key, long := benchKey(spec, spec.Servers/3), benchKey(spec, spec.Servers)
	var id, longID uuid.UUID
	if id, err = reg.ServerID(ctx, key); err != nil {
		return err
	}
	if spec.Long > 0 {
		if longID, err = reg.ServerID(ctx, long); err != nil {
			return err
		}
	}
	cases := []explainCase{
		{name: "bearer key (cache miss)", call: func(ctx context.Context) error {
			_, _, err := organizations.NewService(store.NewOrganizations(pool)).Authenticate(ctx, apiKey)
			return err
		}},
		{name: "server head (cache miss)", call: func(ctx context.Context) error { _, err := reg.ServerHead(ctx, key); return err }},
		{name: "snapshot by id (cache miss)", call: func(ctx context.Context) error {
			h, err := reg.ServerHead(ctx, key)
			if err == nil {
				_, err = reg.Snapshot(ctx, h.CurrentSnapshotID)
			}
			return err
		}},
		{name: "change by id (cache miss)", call: func(ctx context.Context) error {
			h, err := reg.ServerHead(ctx, key)
			if err == nil {
				_, err = reg.Change(ctx, h.LatestChangeID)
			}
			return err
		}},
		{name: "server state (compare)", call: func(ctx context.Context) error { _, err := reg.Server(ctx, key); return err }},
		{name: "server id (history, changes; head cache miss)", call: func(ctx context.Context) error { _, err := reg.ServerID(ctx, key); return err }},
		{name: "history page 1, limit 20", call: func(ctx context.Context) error {
			_, _, err := reg.History(ctx, id, intelligence.Page{Limit: 20})
			return err
		}},
		{name: "feed page 1, limit 100", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{}, intelligence.Page{Limit: 100})
			return err
		}},
		{name: "feed deep page, limit 100", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{}, intelligence.Page{Limit: 100, Cursor: feedDeep})
			return err
		}},
		{name: "high-risk feed page 1", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{HighRiskOnly: true}, intelligence.Page{Limit: 50})
			return err
		}},
		{name: "feed by type page 1", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{Type: intelligence.RemoteHostChanged}, intelligence.Page{Limit: 50})
			return err
		}},
		// The generic-plan risk of the feed by type: a connection that served pages of a common type
		// (version_bump, half of the seeded changes) and then gets a type no change has. A generic plan
		// that walked the seq index backwards filtering on the type would read every change.
		{name: "feed by absent type after common", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{Type: intelligence.StatusDeleted}, intelligence.Page{Limit: 50})
			return err
		}, warm: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{Type: intelligence.VersionBump}, intelligence.Page{Limit: 50})
			return err
		}},
		{name: "server changes page 1", call: func(ctx context.Context) error {
			_, _, err := reg.Changes(ctx, intelligence.ChangeFilter{ServerID: id}, intelligence.Page{Limit: 20})
			return err
		}},
	}
	if spec.Long > 0 {
		cases = append(cases, explainCase{name: "long history deep page, limit 100", call: func(ctx context.Context) error {
			_, _, err := reg.History(ctx, longID, intelligence.Page{Limit: 100, Cursor: historyDeep})
			return err
		}})
	}
	fmt.Fprintln(out, "\nEXPLAIN (ANALYZE, BUFFERS) of the store's own statements: custom plan, then the plan of a cached statement's 6th run:")
	clean := true
	for _, c := range cases {
		rec.take()
		if err := c.call(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		sent := rec.take()
		if len(sent) == 0 {
			return fmt.Errorf("%s: no statement recorded", c.name)
		}
		stmt := sent[len(sent)-1]
		var warm *traced
		if c.warm != nil {
			if err := c.warm(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if w := rec.take(); len(w) > 0 {
				warm = &w[len(w)-1]
			}
		}
		for _, cached := range []bool{false, true} {
			p, err := explainPlan(ctx, conn, stmt, cached, warm)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			flags := p.Plan.suspicious()
			if offsetClause.MatchString(stmt.sql) {
				flags = append(flags, "OFFSET")
			}
			mark := "ok"
			if len(flags) > 0 {
				mark, clean = "CHECK: "+strings.Join(flags, ", "), false
			}
			label := c.name
			if cached {
				label = "  (cached, 6th run)"
			}
			fmt.Fprintf(out, "  %-36s %-4s %6.2f ms  %5.0f rows  %4d buffers (%3d read)  %s\n", label, mark, p.ExecutionTime,
				p.Plan.Rows, p.Plan.Hit+p.Plan.Read, p.Plan.Read, p.Plan.shape())
		}
	}
	if clean {
		fmt.Fprintln(out, "  every plan is index scans under a Limit: no sequential scan, no sort, no OFFSET")
	}
	return nil
}
