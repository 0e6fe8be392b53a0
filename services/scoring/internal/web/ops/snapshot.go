package ops

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// SchemaVersion is metrics_schema_version of GET /metrics.json (README). A change that removes or
// renames a field raises it; adding fields does not.
const SchemaVersion = 1

// Prometheus family names of the numbers the snapshot repeats: the OTel counter scoring.decisions
// (internal/api) and the HTTP server's request duration histogram (pkg/serve), as the OTel
// Prometheus exporter names them.
const (
	familyDecisions = "scoring_decisions_total"
	familyHTTP      = "http_server_request_duration_seconds"
)

// UsageReader reads the persisted usage of a period by plan (store.Store).
type UsageReader interface {
	UsageByPlan(ctx context.Context, period string) ([]store.PlanUsage, error)
}

// Snapshot serves GET /metrics.json: a compact JSON view of this replica's counters (the same numbers
// GET /metrics shows) and of the persisted usage of the month, to keys with the metrics:read scope.
type Snapshot struct {
	Service string
	Started time.Time
	Metrics prometheus.Gatherer
	Usage   UsageReader
	Keys    *keys.Service
	Log     *slog.Logger
	// FlushInterval is the meter's (SCORING_USAGE_FLUSH_INTERVAL): how far persisted usage trails.
	FlushInterval time.Duration
	now           func() time.Time
}

func (s *Snapshot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The same bearer rules, and the same 401 bodies, as the gateway's routes.
	key, err := api.Bearer(r.Context(), s.Keys, r.Header.Values)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !key.HasScope(keys.ScopeMetricsRead) {
		api.WriteError(w, r, errNoScope)
		return
	}
	body, err := s.build(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gateway.WriteJSON(w, http.StatusOK, body)
}

func (s *Snapshot) fail(w http.ResponseWriter, r *http.Request, err error) {
	if _, known := api.WriteError(w, r, err); !known {
		s.Log.ErrorContext(r.Context(), "metrics snapshot failed", "error", err)
	}
}

func (s *Snapshot) build(ctx context.Context) (map[string]any, error) {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	t := now().UTC()
	families, err := s.Metrics.Gather()
	if err != nil {
		return nil, err
	}
	period := t.Format("2006-01")
	byPlan, err := s.Usage.UsageByPlan(ctx, period)
	if err != nil {
		return nil, err
	}
	info := buildinfo.Get(s.Service)
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	return map[string]any{
		"metrics_schema_version": SchemaVersion,
		"service":                s.Service,
		"build": map[string]any{
			"version": info.Version, "commit": info.Commit, "build_time": info.BuildTime, "go_version": info.GoVersion,
		},
		"generated_at":   t.Format(time.RFC3339),
		"started_at":     s.Started.UTC().Format(time.RFC3339),
		"uptime_seconds": t.Sub(s.Started).Round(time.Second).Seconds(),
		"scoring_calls":  scoringCalls(families),
		"http_requests":  httpRequests(families),
		"usage":          usage(period, byPlan, s.FlushInterval),
		"runtime": map[string]any{
			"goroutines": runtime.NumGoroutine(), "heap_alloc_bytes": mem.HeapAlloc, "gc_cycles": mem.NumGC,
		},
	}, nil
}

// scoringCalls sums this replica's scoring decisions since it started by route id, workflow and risk
// level; every route id and workflow is listed, with 0 when it served none.
func scoringCalls(families []*dto.MetricFamily) map[string]any {
	byRoute := map[string]float64{}
	for _, r := range []string{score.RouteUnified, score.RouteBatch, score.RouteDenial, score.RoutePriorAuth, score.RouteReimbursement} {
		byRoute[r] = 0
	}
	byWorkflow := map[string]float64{}
	for _, w := range claim.Workflows {
		byWorkflow[string(w)] = 0
	}
	byRisk := map[string]float64{"high": 0, "medium": 0, "low": 0}
	var total float64
	for _, m := range series(families, familyDecisions) {
		v := m.GetCounter().GetValue()
		total += v
		byRoute[label(m, "route_id")] += v
		byWorkflow[label(m, "workflow")] += v
		byRisk[label(m, "risk_level")] += v
	}
	return map[string]any{
		"scope": "replica_since_start", "total": total,
		"by_route": byRoute, "by_workflow": byWorkflow, "by_risk_level": byRisk,
	}
}

// httpRequests counts this replica's HTTP requests since it started by status class.
func httpRequests(families []*dto.MetricFamily) map[string]any {
	classes := map[string]uint64{"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0}
	var total uint64
	for _, m := range series(families, familyHTTP) {
		n := m.GetHistogram().GetSampleCount()
		total += n
		if code := label(m, "http_response_status_code"); len(code) == 3 {
			classes[code[:1]+"xx"] += n
		}
	}
	return map[string]any{"scope": "replica_since_start", "total": total, "by_status_class": classes}
}

// usage is the month's persisted billable calls over every key and replica, by plan. Replicas flush
// every flush interval, so it trails the meters by about that much.
func usage(period string, byPlan []store.PlanUsage, flush time.Duration) map[string]any {
	plans := map[string]any{}
	for _, p := range keys.Plans {
		plans[p] = map[string]int64{"keys": 0, "billable_calls": 0}
	}
	var total, active int64
	for _, u := range byPlan {
		plans[u.Plan] = map[string]int64{"keys": u.Keys, "billable_calls": u.Calls}
		total += u.Calls
		active += u.Keys
	}
	return map[string]any{
		"meter": "scoring_calls", "period": period, "billable_calls": total, "active_keys": active,
		"by_plan": plans, "consistency": "eventual", "flush_interval_seconds": flush.Seconds(),
	}
}

func series(families []*dto.MetricFamily, name string) []*dto.Metric {
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
