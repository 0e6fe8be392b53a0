package ingest

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// Registration limits; the README documents them.
const (
	MinCadence          = 5 * time.Minute
	MaxCadence          = 30 * 24 * time.Hour
	DefaultCadence      = 24 * time.Hour
	MaxAllowedHosts     = 20
	DefaultMaxDocuments = 20
	MaxMaxDocuments     = 100
	maxTextField        = 200
)

// NewSource is a registration request.
type NewSource struct {
	Organization     string
	Program          string
	Jurisdiction     string
	AllowedHosts     []string
	Adapter          string
	AdapterConfig    map[string]any
	CadenceSeconds   int
	TermsReviewState string
	Enabled          *bool
}

// hostnameRe accepts DNS hostnames (RFC 1123 labels); IP literals are accepted separately.
var hostnameRe = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// CreateSource validates and registers a source.
func (s *Service) CreateSource(ctx context.Context, in NewSource) (Source, error) {
	src, err := s.validateSource(in)
	if err != nil {
		return Source{}, err
	}
	return s.store.CreateSource(ctx, src)
}

func (s *Service) validateSource(in NewSource) (Source, error) {
	v := &ValidationError{}
	text := func(field, value string) string {
		value = strings.TrimSpace(value)
		switch {
		case value == "":
			v.add(field, "missing", "Field required")
		case utf8.RuneCountInString(value) > maxTextField: // characters, as documented: not bytes
			v.add(field, "string_too_long", fmt.Sprintf("String should have at most %d characters", maxTextField))
		}
		return value
	}
	src := Source{
		Organization:     text("organization", in.Organization),
		Program:          text("program", in.Program),
		Jurisdiction:     text("jurisdiction", in.Jurisdiction),
		Adapter:          in.Adapter,
		AdapterConfig:    map[string]any{},
		CadenceSeconds:   in.CadenceSeconds,
		TermsReviewState: in.TermsReviewState,
		Enabled:          in.Enabled == nil || *in.Enabled,
		HealthStatus:     HealthNew,
	}

	hosts := map[string]bool{}
	switch {
	case len(in.AllowedHosts) == 0:
		v.add("allowed_hosts", "missing", "At least one allowlisted hostname is required")
	case len(in.AllowedHosts) > MaxAllowedHosts:
		v.add("allowed_hosts", "too_long", fmt.Sprintf("At most %d hostnames", MaxAllowedHosts))
	}
	for _, h := range in.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, err := netip.ParseAddr(h); err != nil && !hostnameRe.MatchString(h) {
			v.add("allowed_hosts", "value_error", fmt.Sprintf("%q is not a hostname (no scheme, port, path or IP address)", h))
			continue
		}
		// Names only: an address literal is judged with the URL that names it.
		if _, err := netip.ParseAddr(h); err != nil {
			if te := s.checkHostPort(&url.URL{Host: h}); te != nil {
				v.add("allowed_hosts", "value_error", fmt.Sprintf("%q refused: %s: %s", h, te.Code, te.Message))
				continue
			}
		}
		if !hosts[h] {
			hosts[h] = true
			src.AllowedHosts = append(src.AllowedHosts, h)
		}
	}

	if src.CadenceSeconds == 0 {
		src.CadenceSeconds = int(DefaultCadence.Seconds())
	}
	if c := time.Duration(src.CadenceSeconds) * time.Second; c < MinCadence || c > MaxCadence {
		v.add("cadence_seconds", "value_error", fmt.Sprintf("Cadence must be between %d and %d seconds", int(MinCadence.Seconds()), int(MaxCadence.Seconds())))
	}
	if src.TermsReviewState == "" {
		src.TermsReviewState = "pending"
	}
	switch src.TermsReviewState {
	case "pending", "approved", "rejected":
	default:
		v.add("terms_review_state", "enum", "Input should be 'pending', 'approved' or 'rejected'")
	}

	checkURL := func(field string, raw any) string {
		u, _ := raw.(string)
		if u == "" {
			v.add(field, "missing", "Field required")
			return ""
		}
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
			v.add(field, "url_parsing", "Input should be an absolute http(s) URL")
			return ""
		}
		if !hosts[strings.ToLower(parsed.Hostname())] {
			v.add(field, "value_error", fmt.Sprintf("Host %q is not in allowed_hosts", parsed.Hostname()))
			return ""
		}
		if te := s.checkHostPort(parsed); te != nil {
			v.add(field, "value_error", "URL refused: "+te.Code+": "+te.Message)
			return ""
		}
		if err := s.guard.CheckURL(u); err != nil {
			v.add(field, "value_error", "URL is not fetchable: "+err.Error())
			return ""
		}
		return u
	}
	switch in.Adapter {
	case AdapterLiteralURL:
		src.AdapterConfig["url"] = checkURL("adapter_config.url", in.AdapterConfig["url"])
	case AdapterIndexPage:
		src.AdapterConfig["index_url"] = checkURL("adapter_config.index_url", in.AdapterConfig["index_url"])
		pattern, _ := in.AdapterConfig["link_pattern"].(string)
		if pattern == "" {
			v.add("adapter_config.link_pattern", "missing", "Field required")
		} else if _, err := regexp.Compile(pattern); err != nil {
			v.add("adapter_config.link_pattern", "value_error", "Not a valid regular expression (RE2 syntax)")
		}
		src.AdapterConfig["link_pattern"] = pattern
		maxDocs := DefaultMaxDocuments
		if raw, ok := in.AdapterConfig["max_documents"]; ok {
			f, isNum := raw.(float64)
			if !isNum || f != float64(int(f)) || f < 1 || f > MaxMaxDocuments {
				v.add("adapter_config.max_documents", "value_error", fmt.Sprintf("Must be an integer from 1 to %d", MaxMaxDocuments))
			}
			maxDocs = int(f)
		}
		src.AdapterConfig["max_documents"] = float64(maxDocs)
	case "":
		v.add("adapter", "missing", "Field required")
	default:
		v.add("adapter", "enum", "Input should be 'literal_url' or 'index_page'")
	}
	return src, v.orNil()
}

// sourcePorts are the ports a source URL may name while no private network is allowed: https and http.
var sourcePorts = []int{443, 80}

// checkHostPort applies the audit targets' host and port rules, without DNS, to a source's host: names
// that only reach private networks (localhost, *.internal, *.local, single labels...) and ports other
// than 443 and 80 are refused at registration rather than at the first fetch. An operator who opened
// private networks (INGESTION_ALLOW_PRIVATE_CIDRS) runs on-premises document servers, whose names and
// ports are theirs: then only the connect-time address checks apply.
func (s *Service) checkHostPort(u *url.URL) *safehttp.TargetError {
	if len(s.allowPrivate) > 0 {
		return nil
	}
	return safehttp.CheckHostPort(u, sourcePorts, nil)
}

// GetSource returns one source.
func (s *Service) GetSource(ctx context.Context, id uuid.UUID) (Source, error) {
	return s.store.GetSource(ctx, id)
}

// ListSources returns one page of sources, newest first, and the cursor of the next page.
func (s *Service) ListSources(ctx context.Context, p Page) ([]Source, string, error) {
	return s.store.ListSources(ctx, p)
}

// SourceStatus returns a source's health and latest run.
func (s *Service) SourceStatus(ctx context.Context, id uuid.UUID) (SourceStatus, error) {
	return s.store.SourceStatus(ctx, id)
}
