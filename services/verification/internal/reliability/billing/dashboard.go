package billing

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// DashboardLimits bound what one page shows; past them the page says it shows the first ones.
type DashboardLimits struct {
	Repositories int
	Targets      int
	HeldRuns     int
}

// DefaultDashboardLimits are the page's bounds: a workspace on the team plan has at most 50 targets.
var DefaultDashboardLimits = DashboardLimits{Repositories: 200, Targets: 500, HeldRuns: 100}

// Dashboard is what the workspace's page shows.
type Dashboard struct {
	OrganizationID   uuid.UUID
	OrganizationName string
	Status           Status
	Repositories     []DashboardRepository
	HeldRuns         []HeldRun
	// MoreRepositories, MoreTargets and MoreHeldRuns say that a list stopped at its bound.
	MoreRepositories, MoreTargets, MoreHeldRuns bool
	GeneratedAt                                 time.Time
}

// DashboardRepository is a repository with its targets (by name).
type DashboardRepository struct {
	ID            uuid.UUID
	FullName      string
	Provider      string
	DefaultBranch string
	Description   string
	Targets       []DashboardTarget
}

// DashboardTarget is a target with its latest run and its current baseline, each nil when none.
type DashboardTarget struct {
	ID         uuid.UUID
	Name       string
	URL        string
	Evaluators []string
	Latest     *RunBrief
	Baseline   *BaselineBrief
}

// RunBrief is a run as a list shows it.
type RunBrief struct {
	ID         uuid.UUID
	State      string
	Decision   string // "" before the policy decided
	Trigger    string
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// BaselineBrief is a target's current baseline: the newest promotion or rollback.
type BaselineBrief struct {
	RunID     uuid.UUID
	Action    string
	Actor     string
	CreatedAt time.Time
}

// HeldRun is a run waiting for a person's approval (state needs_approval).
type HeldRun struct {
	Run        RunBrief
	Repository string
	Target     string
	// Reasons are the policy's reasons for holding it, as stored (one line each).
	Reasons []string
}

// Dashboard gathers the workspace's page: its billing status, its repositories with their targets,
// latest runs and baselines, and its held runs.
func (s *Service) Dashboard(ctx context.Context, org uuid.UUID, orgName string) (Dashboard, error) {
	st, err := s.Status(ctx, org)
	if err != nil {
		return Dashboard{}, err
	}
	d, err := s.store.Dashboard(ctx, org, DefaultDashboardLimits)
	if err != nil {
		return Dashboard{}, err
	}
	d.OrganizationID, d.OrganizationName, d.Status, d.GeneratedAt = org, orgName, st, s.now().UTC()
	return d, nil
}
