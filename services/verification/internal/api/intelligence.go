package api

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
)

// Intelligence implements verification.v1.IntelligenceService: the registry-intelligence reads. The
// data is global; the bearer interceptor authenticates callers before these handlers run, and they do
// not look at who the caller is.
type Intelligence struct {
	verificationv1.UnimplementedIntelligenceServiceServer
	reader *intelligence.Reader
	cache  *readcache.Cache
}

// NewIntelligence returns the IntelligenceService. cache keeps the immutable parts of the server
// state answers; it is also the gateway codec that writes them (readcache.Cache.Codec).
func NewIntelligence(reader *intelligence.Reader, cache *readcache.Cache) *Intelligence {
	return &Intelligence{reader: reader, cache: cache}
}

// Page bounds of the list routes (README, "Routes").
var (
	intelHistoryLimit       = intelLimit{def: 20, max: 100}
	intelServerChangesLimit = intelLimit{def: 20, max: 100}
	intelFeedLimit          = intelLimit{def: 50, max: 200}
)

// GetServer returns a server's current state: the server's row (one indexed read), with its current
// snapshot and latest change from the cache (both immutable, so read from the database once).
func (s *Intelligence) GetServer(ctx context.Context, req *verificationv1.GetServerRequest) (*verificationv1.GetServerResponse, error) {
	key := intelligence.ServerKey{Namespace: req.GetNamespace(), Name: req.GetName()}
	h, err := s.reader.ServerHead(ctx, key)
	if err != nil {
		return nil, toAPI(err, serverTarget(key))
	}
	snap, ok := s.cache.Server(h.CurrentSnapshotID)
	if !ok {
		cur, err := s.reader.Snapshot(ctx, h.CurrentSnapshotID)
		if err != nil {
			return nil, toAPI(err, serverTarget(key))
		}
		snap = s.cache.AddServer(cur.ID, intelServerTemplate(key, cur))
	}
	st := readcache.State{
		FirstSeenAt: intelTime(h.FirstSeenAt), LastSeenAt: intelTime(h.LastSeenAt),
		ChangeCount: int32(h.ChangeCount), HighRiskChangeCount: int32(h.HighRiskChangeCount),
	}
	if h.LatestChangeID != uuid.Nil {
		ch, ok := s.cache.Change(h.LatestChangeID)
		if !ok {
			c, err := s.reader.Change(ctx, h.LatestChangeID)
			if err != nil {
				return nil, toAPI(err, serverTarget(key))
			}
			ch = s.cache.AddChange(c.ID, intelChangeToProto(c))
		}
		st.LatestChange = ch.Message()
	}
	return &verificationv1.GetServerResponse{Server: snap.Response(st)}, nil
}

// ListServerHistory returns one page of a server's timeline (snapshots and surface observations),
// newest first.
func (s *Intelligence) ListServerHistory(ctx context.Context, req *verificationv1.ListServerHistoryRequest) (*verificationv1.ListServerHistoryResponse, error) {
	page, err := intelHistoryLimit.page(req.Limit, req.GetCursor())
	if err != nil {
		return nil, err
	}
	key := intelligence.ServerKey{Namespace: req.GetNamespace(), Name: req.GetName()}
	items, next, err := s.reader.Timeline(ctx, key, page)
	if err != nil {
		return nil, toAPI(err, serverTarget(key))
	}
	out := &verificationv1.IntelligenceHistoryResponse{
		Namespace: key.Namespace, Name: key.Name, NextCursor: next,
		Items: make([]*verificationv1.IntelligenceHistoryEntry, 0, len(items)),
	}
	for _, e := range items {
		out.Items = append(out.Items, intelTimelineEntryToProto(e))
	}
	return &verificationv1.ListServerHistoryResponse{History: out}, nil
}

// DiffServerHistory compares two points of a server's timeline: versions or surface observations.
func (s *Intelligence) DiffServerHistory(ctx context.Context, req *verificationv1.DiffServerHistoryRequest) (*verificationv1.DiffServerHistoryResponse, error) {
	var missing []string
	if req.GetFrom() == "" {
		missing = append(missing, "from")
	}
	if req.GetTo() == "" {
		missing = append(missing, "to")
	}
	if len(missing) > 0 {
		return nil, intelMissingQuery(missing...)
	}
	key := intelligence.ServerKey{Namespace: req.GetNamespace(), Name: req.GetName()}
	d, err := s.reader.DiffPoints(ctx, key, req.GetFrom(), req.GetTo())
	if err != nil {
		return nil, toAPI(err, serverTarget(key))
	}
	return &verificationv1.DiffServerHistoryResponse{Diff: intelPointDiffToProto(key, req.GetFrom(), req.GetTo(), d)}, nil
}

// ListServerChanges returns one page of a server's changes, newest first.
func (s *Intelligence) ListServerChanges(ctx context.Context, req *verificationv1.ListServerChangesRequest) (*verificationv1.ListServerChangesResponse, error) {
	page, err := intelServerChangesLimit.page(req.Limit, req.GetCursor())
	if err != nil {
		return nil, err
	}
	key := intelligence.ServerKey{Namespace: req.GetNamespace(), Name: req.GetName()}
	items, next, err := s.reader.Changes(ctx, &key, intelligence.ChangeFilter{Type: intelligence.ChangeType(req.GetChangeType())}, page)
	if err != nil {
		return nil, toAPI(err, serverTarget(key))
	}
	return &verificationv1.ListServerChangesResponse{Changes: intelChangesToProto(items, next)}, nil
}

// ListChanges returns one page of the global change feed, newest first.
func (s *Intelligence) ListChanges(ctx context.Context, req *verificationv1.ListChangesRequest) (*verificationv1.ListChangesResponse, error) {
	page, err := intelFeedLimit.page(req.Limit, req.GetCursor())
	if err != nil {
		return nil, err
	}
	items, next, err := s.reader.Changes(ctx, nil, intelligence.ChangeFilter{Type: intelligence.ChangeType(req.GetChangeType())}, page)
	if err != nil {
		return nil, toAPI(err, target{})
	}
	return &verificationv1.ListChangesResponse{Changes: intelChangesToProto(items, next)}, nil
}

// ListHighRiskChanges returns one page of the high-risk feed, newest first.
func (s *Intelligence) ListHighRiskChanges(ctx context.Context, req *verificationv1.ListHighRiskChangesRequest) (*verificationv1.ListHighRiskChangesResponse, error) {
	page, err := intelFeedLimit.page(req.Limit, req.GetCursor())
	if err != nil {
		return nil, err
	}
	items, next, err := s.reader.Changes(ctx, nil, intelligence.ChangeFilter{HighRiskOnly: true}, page)
	if err != nil {
		return nil, toAPI(err, target{})
	}
	return &verificationv1.ListHighRiskChangesResponse{Changes: intelChangesToProto(items, next)}, nil
}

// CompareBatch compares up to intelligence.MaxCompareItems servers or versions, with a result or an error
// per item, in request order.
func (s *Intelligence) CompareBatch(ctx context.Context, req *verificationv1.CompareBatchRequest) (*verificationv1.CompareBatchResponse, error) {
	items, err := intelCompareItems(req.GetBatch().GetItems())
	if err != nil {
		return nil, err
	}
	results, err := s.reader.CompareBatch(ctx, items)
	if err != nil {
		return nil, toAPI(err, target{})
	}
	out := &verificationv1.IntelligenceCompareBatchResponse{Items: make([]*verificationv1.IntelligenceCompareResult, 0, len(results))}
	for _, r := range results {
		out.Items = append(out.Items, intelCompareResultToProto(r))
	}
	return &verificationv1.CompareBatchResponse{Result: out}, nil
}

// intelLimit is a list route's page-size bounds: 1..max, def when absent.
type intelLimit struct{ def, max int32 }

// page validates the limit the way FastAPI's Query(ge=1, le=max) does, with its messages.
func (l intelLimit) page(limit *int32, cursor string) (intelligence.Page, error) {
	p := intelligence.Page{Limit: int(l.def), Cursor: cursor}
	if limit == nil {
		return p, nil
	}
	switch {
	case *limit < 1:
		return p, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be greater than or equal to 1", Type: "greater_than_equal"})
	case *limit > l.max:
		return p, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: fmt.Sprintf("Input should be less than or equal to %d", l.max), Type: "less_than_equal"})
	}
	p.Limit = int(*limit)
	return p, nil
}

// intelMissingQuery is FastAPI's answer to absent required query parameters.
func intelMissingQuery(names ...string) error {
	out := make([]apierror.Violation, 0, len(names))
	for _, n := range names {
		out = append(out, apierror.Violation{Loc: []any{"query", n}, Msg: "Field required", Type: "missing"})
	}
	return apierror.Validation(out...)
}

// intelCompareItems validates a batch compare body: 1..intelligence.MaxCompareItems items, each with a
// namespace and a name.
func intelCompareItems(in []*verificationv1.IntelligenceCompareItem) ([]intelligence.CompareItem, error) {
	switch {
	case len(in) == 0:
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"body", "items"},
			Msg: "List should have at least 1 item after validation, not 0", Type: "too_short"})
	case len(in) > intelligence.MaxCompareItems:
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"body", "items"},
			Msg: fmt.Sprintf("List should have at most %d items after validation, not %d", intelligence.MaxCompareItems, len(in)), Type: "too_long"})
	}
	var problems []apierror.Violation
	out := make([]intelligence.CompareItem, 0, len(in))
	for i, it := range in {
		if it.GetNamespace() == "" {
			problems = append(problems, apierror.Violation{Loc: []any{"body", "items", i, "namespace"}, Msg: "Field required", Type: "missing"})
		}
		if it.GetName() == "" {
			problems = append(problems, apierror.Violation{Loc: []any{"body", "items", i, "name"}, Msg: "Field required", Type: "missing"})
		}
		out = append(out, intelligence.CompareItem{Key: intelligence.ServerKey{Namespace: it.GetNamespace(), Name: it.GetName()}, From: it.GetFrom(), To: it.GetTo()})
	}
	if len(problems) > 0 {
		return nil, apierror.Validation(problems...)
	}
	return out, nil
}
