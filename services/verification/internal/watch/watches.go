package watch

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// maxTargetURL bounds a target URL's length.
const maxTargetURL = 2048

// Evaluators lists the evaluators a watch may run.
var Evaluators = []string{EvaluatorConformance, EvaluatorReadiness}

// NewWatch is a watch request, as the client sent it.
type NewWatch struct {
	TargetURL string
	Evaluator string
	// PolicyID is "" for none.
	PolicyID        string
	IntervalSeconds *int64
}

// WatchPatch is a PATCH of a watch: the fields the client set. A PolicyID of "" detaches the policy.
type WatchPatch struct {
	Status          *string
	PolicyID        *string
	IntervalSeconds *int64
}

// CreateWatch starts watching a target with an evaluator for the caller's organization. The target
// must pass the audit engine's checks (its host is resolved now); the first run is due at once.
func (s *Service) CreateWatch(ctx context.Context, c Caller, in NewWatch) (Watch, error) {
	var problems []fault.Problem
	if in.Evaluator != EvaluatorConformance && in.Evaluator != EvaluatorReadiness {
		problems = append(problems, fault.Problem{Field: "evaluator", Message: "Input should be 'mcp' or 'readiness'", Type: "enum"})
	}
	interval := int(s.defaultInterval / time.Second)
	if in.IntervalSeconds != nil {
		n, p := s.checkInterval(*in.IntervalSeconds)
		problems = append(problems, p...)
		interval = n
	}
	policy, p := checkPolicyID(in.PolicyID)
	problems = append(problems, p...)
	target, host, p, err := s.checkTargetURL(ctx, in.TargetURL)
	if err != nil {
		return Watch{}, err
	}
	problems = append(problems, p...)
	if len(problems) > 0 {
		return Watch{}, &fault.ValidationError{Problems: problems}
	}
	now := s.clock()
	w, err := s.store.CreateWatch(ctx, Watch{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: c.OrganizationID, TargetURL: target, TargetHost: host,
		Evaluator: in.Evaluator, Status: StatusActive, PolicyID: policy, IntervalSeconds: interval,
		// The scheduler takes a watch whose next run is due: the first is due at creation.
		NextRunAt: now, CreatedAt: now, UpdatedAt: now,
	}, s.limit)
	switch {
	case errors.Is(err, fault.ErrWatchLimit):
		return Watch{}, &fault.LimitError{Err: fault.ErrWatchLimit, Limit: s.limit}
	case errors.Is(err, fault.ErrUnknownPolicy):
		return Watch{}, unknownPolicy()
	}
	return w, err
}

// ListWatches returns a page of the caller's watches that are not archived, newest first: all of
// them, or those of status (active or paused; the route checks it).
func (s *Service) ListWatches(ctx context.Context, c Caller, status string, page Page) ([]Watch, string, error) {
	return s.store.ListWatches(ctx, c.OrganizationID, status, page)
}

// GetWatch returns a watch of the caller's that is not archived, with its last run.
func (s *Service) GetWatch(ctx context.Context, c Caller, id uuid.UUID) (Watch, error) {
	return s.store.GetWatch(ctx, c.OrganizationID, id)
}

// UpdateWatch pauses or resumes a watch, or changes its policy or interval; an empty patch is
// invalid.
func (s *Service) UpdateWatch(ctx context.Context, c Caller, id uuid.UUID, in WatchPatch) (Watch, error) {
	if in.Status == nil && in.PolicyID == nil && in.IntervalSeconds == nil {
		return Watch{}, fault.Invalid("", "value_error", "Set at least one of status, policyId, intervalSeconds")
	}
	change := WatchChange{At: s.clock()}
	var problems []fault.Problem
	if in.Status != nil {
		if *in.Status != StatusActive && *in.Status != StatusPaused {
			problems = append(problems, fault.Problem{Field: "status", Message: "Input should be 'active' or 'paused'", Type: "enum"})
		}
		change.Status = in.Status
	}
	if in.PolicyID != nil {
		policy, p := checkPolicyID(*in.PolicyID)
		problems = append(problems, p...)
		change.SetPolicy, change.PolicyID = true, policy
	}
	if in.IntervalSeconds != nil {
		n, p := s.checkInterval(*in.IntervalSeconds)
		problems = append(problems, p...)
		change.IntervalSeconds = &n
	}
	if len(problems) > 0 {
		return Watch{}, &fault.ValidationError{Problems: problems}
	}
	w, err := s.store.UpdateWatch(ctx, c.OrganizationID, id, change)
	if errors.Is(err, fault.ErrUnknownPolicy) {
		return Watch{}, unknownPolicy()
	}
	return w, err
}

// ArchiveWatch archives a watch of the caller's: it stops running, reads as not found, frees its
// target and evaluator for a new watch, and lets go of its policy.
func (s *Service) ArchiveWatch(ctx context.Context, c Caller, id uuid.UUID) error {
	return s.store.ArchiveWatch(ctx, c.OrganizationID, id, s.clock())
}

// checkInterval checks an interval in seconds against the service's bounds.
func (s *Service) checkInterval(n int64) (int, []fault.Problem) {
	lo, hi := int64(s.minInterval/time.Second), int64(MaxInterval/time.Second)
	if n < lo || n > hi {
		return 0, []fault.Problem{{Field: "intervalSeconds", Type: "value_error",
			Message: "Input should be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)}}
	}
	return int(n), nil
}

// checkPolicyID parses an optional policy id ("" for none).
func checkPolicyID(raw string) (*uuid.UUID, []fault.Problem) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, []fault.Problem{{Field: "policyId", Message: "Input should be a valid UUID", Type: "uuid_parsing"}}
	}
	return &id, nil
}

func unknownPolicy() error {
	return fault.Invalid("policyId", "value_error", "Unknown watch policy")
}

// checkTargetURL applies the audit engine's target checks to raw and returns it normalised (scheme
// and host in lower case, no default port), with its host. A refusal is a problem of the field
// targetUrl whose type is the refusal's code; err is only the service's own failure.
func (s *Service) checkTargetURL(ctx context.Context, raw string) (target, host string, problems []fault.Problem, err error) {
	raw = strings.TrimSpace(raw)
	if len(raw) > maxTargetURL {
		return "", "", []fault.Problem{{Field: "targetUrl", Message: "URL should have at most 2048 characters", Type: "string_too_long"}}, nil
	}
	if err := s.checkTarget(ctx, raw); err != nil {
		if t, ok := safehttp.AsTargetError(err); ok {
			return "", "", []fault.Problem{{Field: "targetUrl", Message: t.Message, Type: t.Code}}, nil
		}
		return "", "", nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// CheckTarget parsed it: unreachable, but refused rather than stored.
		return "", "", []fault.Problem{{Field: "targetUrl", Message: "Invalid URL", Type: safehttp.TargetURLRequired}}, nil
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host = strings.ToLower(u.Hostname())
	u.Host = strings.ToLower(u.Host)
	if port := u.Port(); port == "443" || port == "" {
		u.Host = host
		if strings.Contains(host, ":") {
			u.Host = "[" + host + "]"
		}
	} else {
		u.Host = net.JoinHostPort(host, port)
	}
	return u.String(), host, nil, nil
}
