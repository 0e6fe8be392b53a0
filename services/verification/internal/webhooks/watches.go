package webhooks

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// WatchActive is the state of a new watch. DELETE .../watch archives it (a soft delete); the schema
// also allows paused, which no route sets yet.
const WatchActive = "active"

// Risk levels, lowest first.
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// Filter bounds.
const (
	maxChangeTypes = 50
	maxEndpointIDs = 50
)

var changeTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// NewWatch is a watch request; the strings are as the client sent them.
type NewWatch struct {
	Namespace   string
	Name        string
	ChangeTypes []string
	MinRisk     string
	EndpointIDs []string
}

// CreateWatch watches a server the registry sync knows (fault.ErrServerNotFound otherwise).
func (s *Service) CreateWatch(ctx context.Context, organizationID uuid.UUID, in NewWatch) (Watch, error) {
	filters, err := s.checkFilters(ctx, organizationID, in)
	if err != nil {
		return Watch{}, err
	}
	ok, err := s.servers.Exists(ctx, in.Namespace, in.Name)
	if err != nil {
		return Watch{}, err
	}
	if !ok {
		return Watch{}, fault.ErrServerNotFound
	}
	w, err := s.store.CreateWatch(ctx, Watch{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: organizationID, Namespace: in.Namespace, Name: in.Name,
		State: WatchActive, Filters: filters,
	}, s.cfg.MaxActiveWatches)
	if errors.Is(err, fault.ErrWatchLimit) {
		return Watch{}, &fault.LimitError{Err: fault.ErrWatchLimit, Limit: s.cfg.MaxActiveWatches}
	}
	return w, err
}

func (s *Service) checkFilters(ctx context.Context, organizationID uuid.UUID, in NewWatch) (Filters, error) {
	var problems []fault.Problem
	f := Filters{ChangeTypes: []string{}, MinRisk: strings.ToLower(strings.TrimSpace(in.MinRisk)), EndpointIDs: []uuid.UUID{}}
	if len(in.ChangeTypes) > maxChangeTypes {
		problems = append(problems, fault.Problem{Field: "change_types", Message: "List should have at most 50 items", Type: "too_long"})
	}
	seen := map[string]bool{}
	for i, t := range in.ChangeTypes {
		if !changeTypePattern.MatchString(t) {
			problems = append(problems, fault.Problem{Field: "change_types." + strconv.Itoa(i), Message: "Change type should be 1..64 characters of a-z, 0-9 and '_'", Type: "value_error"})
		} else if !seen[t] {
			seen[t] = true
			f.ChangeTypes = append(f.ChangeTypes, t)
		}
	}
	if f.MinRisk == "" {
		f.MinRisk = RiskLow
	}
	if riskRank(f.MinRisk) == 0 {
		problems = append(problems, fault.Problem{Field: "min_risk", Message: "Input should be 'low', 'medium' or 'high'", Type: "enum"})
	}
	if len(in.EndpointIDs) > maxEndpointIDs {
		problems = append(problems, fault.Problem{Field: "endpoint_ids", Message: "List should have at most 50 items", Type: "too_long"})
	}
	index := map[uuid.UUID]int{}
	for i, raw := range in.EndpointIDs {
		id, err := uuid.Parse(raw)
		if err != nil {
			problems = append(problems, fault.Problem{Field: "endpoint_ids." + strconv.Itoa(i), Message: "Input should be a valid UUID", Type: "uuid_parsing"})
			continue
		}
		if _, dup := index[id]; !dup {
			index[id] = i
			f.EndpointIDs = append(f.EndpointIDs, id)
		}
	}
	if len(problems) == 0 && len(f.EndpointIDs) > 0 {
		missing, err := s.store.MissingEndpoints(ctx, organizationID, f.EndpointIDs)
		if err != nil {
			return Filters{}, err
		}
		for _, id := range missing {
			problems = append(problems, fault.Problem{Field: "endpoint_ids." + strconv.Itoa(index[id]), Message: "Unknown webhook endpoint", Type: "value_error"})
		}
	}
	if len(problems) > 0 {
		return Filters{}, &fault.ValidationError{Problems: problems}
	}
	return f, nil
}

// riskRank orders risk levels; 0 for an unknown one.
func riskRank(risk string) int {
	switch risk {
	case RiskLow:
		return 1
	case RiskMedium:
		return 2
	case RiskHigh:
		return 3
	}
	return 0
}

// GetWatch returns the organization's active watch of a server.
func (s *Service) GetWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) (Watch, error) {
	return s.store.GetWatch(ctx, organizationID, namespace, name)
}

// ArchiveWatch archives the organization's watch of a server.
func (s *Service) ArchiveWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) error {
	return s.store.ArchiveWatch(ctx, organizationID, namespace, name)
}
