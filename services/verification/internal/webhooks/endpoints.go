package webhooks

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Input bounds of an endpoint.
const (
	maxURLLength         = 2048
	maxDescriptionLength = 500
)

// NewEndpoint is a registration request.
type NewEndpoint struct {
	URL         string
	Description string
	EventTypes  []string
}

// CreateEndpoint registers an endpoint for the organization and returns it with its signing secret,
// which is stored for signing and never shown again.
func (s *Service) CreateEndpoint(ctx context.Context, organizationID uuid.UUID, in NewEndpoint) (Endpoint, string, error) {
	e, err := s.checkEndpoint(in)
	if err != nil {
		return Endpoint{}, "", err
	}
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, "", err
	}
	e.ID = uuid.Must(uuid.NewV7())
	e.OrganizationID = organizationID
	e, err = s.store.CreateEndpoint(ctx, e, secret, s.cfg.MaxEndpoints)
	if errors.Is(err, fault.ErrEndpointLimit) {
		return Endpoint{}, "", &fault.LimitError{Err: fault.ErrEndpointLimit, Limit: s.cfg.MaxEndpoints}
	}
	if err != nil {
		return Endpoint{}, "", err
	}
	return e, secret, nil
}

func (s *Service) checkEndpoint(in NewEndpoint) (Endpoint, error) {
	var problems []fault.Problem
	raw := strings.TrimSpace(in.URL)
	if msg := s.checkURL(raw); msg != "" {
		problems = append(problems, fault.Problem{Field: "url", Message: msg, Type: "value_error"})
	}
	desc := strings.TrimSpace(in.Description)
	if utf8.RuneCountInString(desc) > maxDescriptionLength {
		problems = append(problems, fault.Problem{Field: "description", Message: "String should have at most 500 characters", Type: "string_too_long"})
	}
	types := []string{}
	for i, t := range in.EventTypes {
		if !knownEventType(t) {
			problems = append(problems, fault.Problem{Field: "event_types." + strconv.Itoa(i), Message: "Unknown event type: want one of " + strings.Join(EventTypes, ", "), Type: "value_error"})
			continue
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if len(problems) > 0 {
		return Endpoint{}, &fault.ValidationError{Problems: problems}
	}
	return Endpoint{URL: raw, Description: desc, EventTypes: types}, nil
}

// checkURL returns why raw cannot be an endpoint URL, or "". The SSRF-safe client applies its rules
// (scheme, credentials, host syntax, blocked literal addresses); on top of them, plain http is only
// for an IP literal inside the operator's private networks, because a signed payload sent in clear
// over the internet could be read or replayed by anyone on the path.
func (s *Service) checkURL(raw string) string {
	switch {
	case raw == "":
		return "Field required"
	case len(raw) > maxURLLength:
		return "URL should have at most 2048 characters"
	}
	if err := s.client.CheckURL(raw); err != nil {
		return "URL refused: " + describe(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "URL refused: malformed URL"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "URL refused: a fragment is never sent; remove it"
	}
	// The audit targets' host and port rules, without DNS: names that only reach private networks
	// (vault.internal, printer.local, corp) and ports other than 443 are refused now rather than at
	// the first delivery; an IP literal inside the allowed private networks may use any port.
	if te := safehttp.CheckHostPort(u, nil, s.cfg.AllowPrivate); te != nil {
		return "URL refused: " + te.Code + ": " + te.Message
	}
	if strings.EqualFold(u.Scheme, "http") && !s.privateLiteral(u.Hostname()) {
		return "URL refused: https required (plain http only for an address inside the allowed private networks)"
	}
	return ""
}

func (s *Service) privateLiteral(host string) bool {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range s.cfg.AllowPrivate {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// describe renders a safehttp refusal without the package's prefix.
func describe(err error) string {
	var e *safehttp.Error
	if !errors.As(err, &e) {
		return "invalid URL"
	}
	if e.Reason != "" {
		return e.Kind.String() + ": " + e.Reason
	}
	return e.Kind.String()
}

// ListEndpoints lists the organization's endpoints.
func (s *Service) ListEndpoints(ctx context.Context, organizationID uuid.UUID) ([]Endpoint, error) {
	return s.store.ListEndpoints(ctx, organizationID)
}

// RevokeEndpoint revokes an endpoint: its pending deliveries fail with endpoint_revoked.
func (s *Service) RevokeEndpoint(ctx context.Context, organizationID, id uuid.UUID) error {
	return s.store.RevokeEndpoint(ctx, organizationID, id)
}

// EnableEndpoint re-enables a disabled endpoint. Deliveries that failed while it was disabled stay
// failed; replay the ones that matter.
func (s *Service) EnableEndpoint(ctx context.Context, organizationID, id uuid.UUID) (Endpoint, error) {
	return s.store.EnableEndpoint(ctx, organizationID, id)
}
