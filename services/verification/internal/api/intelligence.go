package api

import (
	"context"

	"github.com/google/uuid"

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

// Page bounds of the list routes (Document 1 "Limits").
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
		return nil, intelToAPI(err, key)
	}
	snap, ok := s.cache.Server(h.CurrentSnapshotID)
	if !ok {
		cur, err := s.reader.Snapshot(ctx, h.CurrentSnapshotID)
		if err != nil {
			return nil, intelToAPI(err, key)
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
				return nil, intelToAPI(err, key)
			}
			ch = s.cache.AddChange(c.ID, intelChangeToProto(c))
		}
		st.LatestChange = ch.Message()
	}
	return &verificationv1.GetServerResponse{Server: snap.Response(st)}, nil
}

// ListServerHistory returns one page of a server's snapshots, newest first.
func (s *Intelligence) ListServerHistory(ctx context.Context, req *verificationv1.ListServerHistoryRequest) (*verificationv1.ListServerHistoryResponse, error) {
	page, err := intelHistoryLimit.page(req.Limit, req.GetCursor())
	if err != nil {
		return nil, err
	}
	key := intelligence.ServerKey{Namespace: req.GetNamespace(), Name: req.GetName()}
	items, next, err := s.reader.History(ctx, key, page)
	if err != nil {
		return nil, intelToAPI(err, key)
	}
	out := &verificationv1.IntelligenceHistoryResponse{
		Namespace: key.Namespace, Name: key.Name, NextCursor: next,
		Items: make([]*verificationv1.IntelligenceHistoryEntry, 0, len(items)),
	}
	for _, snap := range items {
		out.Items = append(out.Items, intelHistoryEntryToProto(snap))
	}
	return &verificationv1.ListServerHistoryResponse{History: out}, nil
}

// DiffServerHistory compares two versions of a server field by field.
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
	d, err := s.reader.DiffVersions(ctx, key, req.GetFrom(), req.GetTo())
	if err != nil {
		return nil, intelToAPI(err, key)
	}
	return &verificationv1.DiffServerHistoryResponse{Diff: &verificationv1.IntelligenceHistoryDiffResponse{
		Namespace: key.Namespace, Name: key.Name, From: req.GetFrom(), To: req.GetTo(),
		FromSnapshotId: d.From.ID.String(), ToSnapshotId: d.To.ID.String(),
		Changes: intelDiffToProto(d.Changes), HighestRisk: string(intelligence.HighestRisk(d.Changes)),
	}}, nil
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
		return nil, intelToAPI(err, key)
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
		return nil, intelToAPI(err, intelligence.ServerKey{})
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
		return nil, intelToAPI(err, intelligence.ServerKey{})
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
		return nil, intelToAPI(err, intelligence.ServerKey{})
	}
	out := &verificationv1.IntelligenceCompareBatchResponse{Items: make([]*verificationv1.IntelligenceCompareResult, 0, len(results))}
	for _, r := range results {
		out.Items = append(out.Items, intelCompareResultToProto(r))
	}
	return &verificationv1.CompareBatchResponse{Result: out}, nil
}
