// Package registryclient reads MCP registries that speak the official MCP registry API
// (GET /v0.1/servers, modelcontextprotocol/registry docs/reference/api/openapi.yaml) through the
// SSRF-safe client, and turns their listings into intel observations. It is the sync's
// anti-corruption layer: whatever a registry answers, the sync sees either a valid page of valid
// observations (with the invalid items counted) or an error.
package registryclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// ErrBadPage is returned for a response that is not a listing page: not JSON, not an object, no
// servers array, members of the wrong type, or metadata that contradicts the items.
var ErrBadPage = errors.New("registry answered something that is not a listing page")

// officialMeta is the _meta key under which the official registry (and registries that follow its API)
// put their own metadata about an entry.
const officialMeta = "io.modelcontextprotocol.registry/official"

// Options configure a Client. Zero values take safehttp's defaults, except MaxPageBytes.
type Options struct {
	// AllowPrivate lists the private networks registries may be reached in (on-premises registries,
	// tests on loopback); the default is none.
	AllowPrivate []netip.Prefix
	// Timeout caps one attempt; MaxAttempts bounds retries of transient failures (5xx, timeouts).
	Timeout     time.Duration
	MaxAttempts int
	// MaxPageBytes caps one page (default 16 MiB: 100 entries of the largest server.json seen in the
	// official registry, about 40 KiB, with a wide margin).
	MaxPageBytes int64
}

// Client lists registry servers. It is safe for concurrent use.
type Client struct {
	http *safehttp.Client
}

// New returns a Client; opts are passed to safehttp.New (tests shorten its back-off).
func New(o Options, opts ...safehttp.Option) *Client {
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = 16 << 20
	}
	return &Client{http: safehttp.New(safehttp.Policy{
		AllowPrivate: o.AllowPrivate, Timeout: o.Timeout, MaxAttempts: o.MaxAttempts, MaxBytes: o.MaxPageBytes,
		AllowedMIME: []string{"application/json"},
	}, opts...)}
}

// ParseBaseURL checks a registry base URL (http or https, a host, no credentials, query or fragment)
// and returns it without a trailing slash; the listing is at <base>/v0.1/servers.
func ParseBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", fmt.Errorf("registry URL %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", fmt.Errorf("registry URL %q: want an absolute http or https URL", raw)
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return "", fmt.Errorf("registry URL %q: credentials, query and fragment are not allowed", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// ListServers fetches one page of registry's listing.
func (c *Client) ListServers(ctx context.Context, registry string, q intelligence.ListQuery) (intelligence.ListPage, error) {
	u, err := url.Parse(registry)
	if err != nil {
		return intelligence.ListPage{}, fmt.Errorf("registry URL: %w", err)
	}
	u = u.JoinPath("v0.1", "servers")
	params := url.Values{}
	if q.Limit > 0 {
		params.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		params.Set("cursor", q.Cursor)
	}
	if !q.UpdatedSince.IsZero() {
		params.Set("updated_since", q.UpdatedSince.UTC().Format(time.RFC3339Nano))
	}
	u.RawQuery = params.Encode()
	resp, err := c.http.Do(ctx, &safehttp.Request{URL: u.String(), Header: http.Header{"Accept": {"application/json"}}})
	if err != nil {
		return intelligence.ListPage{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return intelligence.ListPage{}, err
	}
	return decodePage(body)
}

type wirePage struct {
	Servers  *[]json.RawMessage `json:"servers"`
	Metadata *struct {
		NextCursor *string `json:"nextCursor"`
		Count      *int    `json:"count"`
	} `json:"metadata"`
}

type wireItem struct {
	Server json.RawMessage            `json:"server"`
	Meta   map[string]json.RawMessage `json:"_meta"`
}

type wireOfficial struct {
	Status        string     `json:"status"`
	StatusMessage string     `json:"statusMessage"`
	PublishedAt   *time.Time `json:"publishedAt"`
	UpdatedAt     *time.Time `json:"updatedAt"`
	IsLatest      *bool      `json:"isLatest"`
}

// decodePage reads a listing page: the envelope must be right or the page is refused; each item is
// validated on its own and skipped, with its reason, when it fails.
func decodePage(body []byte) (intelligence.ListPage, error) {
	var w wirePage
	if err := json.Unmarshal(body, &w); err != nil {
		return intelligence.ListPage{}, fmt.Errorf("%w: %v", ErrBadPage, err)
	}
	if w.Servers == nil {
		return intelligence.ListPage{}, fmt.Errorf("%w: no servers array", ErrBadPage)
	}
	var page intelligence.ListPage
	if m := w.Metadata; m != nil {
		if m.Count != nil && *m.Count != len(*w.Servers) {
			return intelligence.ListPage{}, fmt.Errorf("%w: metadata.count is %d but the page has %d servers", ErrBadPage, *m.Count, len(*w.Servers))
		}
		if m.NextCursor != nil {
			page.NextCursor = *m.NextCursor
		}
	}
	for i, raw := range *w.Servers {
		o, err := decodeItem(raw)
		if err != nil {
			page.Skipped = append(page.Skipped, intelligence.SkippedItem{Index: i, Reason: err.Error()})
			continue
		}
		page.Observations = append(page.Observations, o)
	}
	return page, nil
}

// decodeItem reads one entry. Without the official metadata the entry counts as active and latest:
// a registry that does not version its entries lists only the current one.
func decodeItem(raw json.RawMessage) (intelligence.Observation, error) {
	var it wireItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return intelligence.Observation{}, fmt.Errorf("item: %w", err)
	}
	if len(it.Server) == 0 {
		return intelligence.Observation{}, errors.New("item has no server")
	}
	server, err := intelligence.DecodeServer(it.Server)
	if err != nil {
		return intelligence.Observation{}, err
	}
	o := intelligence.Observation{Server: server, Status: intelligence.LifecycleActive, IsLatest: true}
	if meta, ok := it.Meta[officialMeta]; ok {
		var off wireOfficial
		if err := json.Unmarshal(meta, &off); err != nil {
			return intelligence.Observation{}, fmt.Errorf("%s: %w", officialMeta, err)
		}
		if off.Status != "" {
			o.Status = off.Status
		}
		if !intelligence.ValidStatus(o.Status) {
			return intelligence.Observation{}, fmt.Errorf("%s: status %q is not active, deprecated or deleted", officialMeta, off.Status)
		}
		o.StatusMessage = off.StatusMessage
		if off.IsLatest != nil {
			o.IsLatest = *off.IsLatest
		}
		if off.PublishedAt != nil {
			o.PublishedAt = *off.PublishedAt
		}
		if off.UpdatedAt != nil {
			o.UpdatedAt = *off.UpdatedAt
		}
	}
	return o, nil
}
