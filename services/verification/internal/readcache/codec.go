package readcache

import (
	"bytes"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/types/known/timestamppb"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
)

// Codec wraps the gateway's marshaler (gateway.WithCodec): it writes an IntelligenceServerResponse
// built by Server.Response from the cache's rendered parts, and hands every other value, and any
// server answer it cannot vouch for, to base. base must be the gateway's marshaler, whose bytes the
// parts are.
func (c *Cache) Codec(base runtime.Marshaler) runtime.Marshaler {
	return &codec{Marshaler: base, cache: c}
}

type codec struct {
	runtime.Marshaler
	cache *Cache
}

// Marshal writes a server answer from the cache when it can, and anything else with the base.
func (m *codec) Marshal(v any) ([]byte, error) {
	if s, ok := v.(*verificationv1.IntelligenceServerResponse); ok && s != nil {
		if b, ok := m.cache.encodeServer(m.Marshaler, s); ok {
			return b, nil
		}
	}
	return m.Marshaler.Marshal(v)
}

// Delimiter is base's record separator, or "\n" (the gateway's own default) when base has none.
func (m *codec) Delimiter() []byte {
	if d, ok := m.Marshaler.(runtime.Delimited); ok {
		return d.Delimiter()
	}
	return []byte("\n")
}

// headSuffix ends base's JSON of an answer that has only the fields a snapshot determines: the
// counters, which EmitDefaultValues writes even when zero, and the closing brace. The fields that
// follow content_hash (19 to 24) are written by encodeServer in their place.
const headSuffix = `,"change_count":0,"high_risk_change_count":0}`

// encodeServer writes m as base would, from its entry's rendered parts; ok is false when m was not
// built from an entry of this cache or a part cannot be rendered (base then writes it, or refuses).
func (c *Cache) encodeServer(base runtime.Marshaler, m *verificationv1.IntelligenceServerResponse) ([]byte, bool) {
	id, err := uuid.Parse(m.SnapshotId)
	if err != nil {
		return nil, false
	}
	e, ok := c.entries.Peek(key{kindServer, id})
	if !ok {
		return nil, false
	}
	s := e.(*Server)
	if !s.builtFrom(m) {
		return nil, false
	}
	s.r.once.Do(func() { s.r.ok = s.render(base) })
	if !s.r.ok {
		return nil, false
	}
	var change []byte
	if m.LatestChange != nil {
		if change, ok = c.changeJSON(base, m.LatestChange); !ok {
			return nil, false
		}
	}
	b := make([]byte, 0, len(s.head)+len(s.serverJSON)+len(change)+192)
	b = append(b, s.head...)
	if m.FirstSeenAt != nil {
		if b, ok = appendTimestamp(append(b, `,"first_seen_at":`...), m.FirstSeenAt); !ok {
			return nil, false
		}
	}
	if m.LastSeenAt != nil {
		if b, ok = appendTimestamp(append(b, `,"last_seen_at":`...), m.LastSeenAt); !ok {
			return nil, false
		}
	}
	if change != nil {
		b = append(append(b, `,"latest_change":`...), change...)
	}
	b = strconv.AppendInt(append(b, `,"change_count":`...), int64(m.ChangeCount), 10)
	b = strconv.AppendInt(append(b, `,"high_risk_change_count":`...), int64(m.HighRiskChangeCount), 10)
	if s.serverJSON != nil {
		b = append(append(b, `,"server_json":`...), s.serverJSON...)
	}
	return append(b, '}'), true
}

// render writes the entry's parts with base, once.
func (s *Server) render(base runtime.Marshaler) bool {
	t := s.tmpl
	head, err := base.Marshal(&verificationv1.IntelligenceServerResponse{
		Namespace: t.Namespace, Name: t.Name, FullName: t.FullName, Version: t.Version, Status: t.Status,
		StatusMessage: t.StatusMessage, Title: t.Title, Description: t.Description, WebsiteUrl: t.WebsiteUrl,
		Repository: t.Repository, Packages: t.Packages, Remotes: t.Remotes, IsLatest: t.IsLatest,
		PublishedAt: t.PublishedAt, RegistryUpdatedAt: t.RegistryUpdatedAt, Registry: t.Registry,
		SnapshotId: t.SnapshotId, ContentHash: t.ContentHash,
	})
	if err != nil || !bytes.HasSuffix(head, []byte(headSuffix)) {
		return false
	}
	s.head = head[:len(head)-len(headSuffix)]
	if t.ServerJson != nil {
		if s.serverJSON, err = base.Marshal(t.ServerJson); err != nil {
			return false
		}
	}
	return true
}

// changeJSON returns base's JSON of a change: rendered once when msg is a cached entry's message,
// written by base otherwise.
func (c *Cache) changeJSON(base runtime.Marshaler, msg *verificationv1.IntelligenceChange) ([]byte, bool) {
	if id, err := uuid.Parse(msg.Id); err == nil {
		if e, ok := c.entries.Peek(key{kindChange, id}); ok && e.(*Change).msg == msg {
			ch := e.(*Change)
			ch.r.once.Do(func() {
				var err error
				ch.json, err = base.Marshal(msg)
				ch.r.ok = err == nil
			})
			return ch.json, ch.r.ok
		}
	}
	b, err := base.Marshal(msg)
	return b, err == nil
}

// The range protojson accepts for a Timestamp: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// appendTimestamp writes a Timestamp as protojson does: RFC 3339 in UTC with 0, 3, 6 or 9 fractional
// digits; ok is false for one protojson refuses.
func appendTimestamp(b []byte, t *timestamppb.Timestamp) ([]byte, bool) {
	secs, nanos := t.GetSeconds(), t.GetNanos()
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
		return b, false
	}
	b = append(b, '"')
	b = time.Unix(secs, int64(nanos)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000")
	// protojson trims whole groups of three zeros, then the point when no digit is left.
	b = bytes.TrimSuffix(b, []byte("000"))
	b = bytes.TrimSuffix(b, []byte("000"))
	b = bytes.TrimSuffix(b, []byte(".000"))
	return append(b, 'Z', '"'), true
}
