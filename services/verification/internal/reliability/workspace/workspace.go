// Package workspace is the workspace half of agent reliability: a workspace's repositories (added by
// hand or registered from a code-host installation), their targets, the targets' scan schedules,
// each repository's deployment policy, and the deletion of the whole workspace. The workspace is
// the organization whose API key calls; every lookup is scoped to it, and another workspace's ids
// read as fault.ErrNotFound.
package workspace

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/schedule"
)

// Bounds of a workspace.
const (
	// MaxRepositories caps a workspace's repositories, so that a list is one bounded answer.
	MaxRepositories = 1000
	// MaxTargetsPerRepository caps a repository's targets on every plan.
	MaxTargetsPerRepository = 100
	// DeletionConfirmation is what POST /workspace/delete-all's confirm must say.
	DeletionConfirmation = "delete all agent reliability data"
)

// Providers of a repository.
const (
	ProviderManual   = "manual"
	ProviderCodeHost = "code-host"
)

// Evaluators a target may run.
const (
	EvaluatorMCP       = "mcp"
	EvaluatorReadiness = "readiness"
)

// Errors of the workspace use cases, besides fault's (ErrNotFound, *fault.ValidationError).
var (
	// ErrRepositoryExists: the workspace has a repository of this full name.
	ErrRepositoryExists = errors.New("repository exists")
	// ErrTargetExists: the repository has a target of this name.
	ErrTargetExists = errors.New("target name exists")
	// ErrRepositoryLimit: the workspace has MaxRepositories repositories (a *LimitError).
	ErrRepositoryLimit = errors.New("repository limit reached")
	// ErrTargetLimit: the repository has MaxTargetsPerRepository targets (a *LimitError).
	ErrTargetLimit = errors.New("target limit of the repository reached")
	// ErrCodeHostRepository: a code-host repository keeps the code host's name.
	ErrCodeHostRepository = errors.New("a code-host repository cannot be renamed")
	// ErrRevisionConflict: a policy PUT expected another revision (a *RevisionError).
	ErrRevisionConflict = errors.New("deployment policy revision conflict")
	// ErrInstallationLinked: the installation is linked to another workspace.
	ErrInstallationLinked = errors.New("installation linked to another workspace")
	// ErrCodeHostNotConfigured: the operator has not configured the code host's app.
	ErrCodeHostNotConfigured = errors.New("code host not configured")
	// ErrCodeHostUnavailable: the code host's API could not be read (down, refused the app's
	// credential, or answered something unexpected).
	ErrCodeHostUnavailable = errors.New("code host unavailable")
	// ErrInstallationNotFound: the code host knows no installation of the app with this id.
	ErrInstallationNotFound = errors.New("installation not found")
	// ErrInstallationSuspended: the installation exists and is suspended.
	ErrInstallationSuspended = errors.New("installation suspended")
)

// PlanLimitError is returned when the workspace has as many targets as its plan allows.
type PlanLimitError struct {
	Plan  string
	Limit int
}

func (e *PlanLimitError) Error() string { return "plan limit reached" }

// LimitError wraps ErrRepositoryLimit or ErrTargetLimit with the cap.
type LimitError struct {
	Err   error
	Limit int
}

func (e *LimitError) Error() string { return e.Err.Error() }

// Unwrap returns the sentinel.
func (e *LimitError) Unwrap() error { return e.Err }

// RevisionError wraps ErrRevisionConflict with the current revision.
type RevisionError struct {
	Current int
}

func (e *RevisionError) Error() string { return ErrRevisionConflict.Error() }

// Unwrap returns ErrRevisionConflict.
func (e *RevisionError) Unwrap() error { return ErrRevisionConflict }

// Repository is a repository of a workspace.
type Repository struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	FullName       string
	Provider       string
	ExternalID     string
	// InstallationID is the code host's id of the installation that registered it (0 for none).
	InstallationID int64
	DefaultBranch  string
	Description    string
	// TargetCount is how many targets it has (filled by reads).
	TargetCount int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// RepositoryChange is what an update changes; nil fields are left as they are.
type RepositoryChange struct {
	FullName, DefaultBranch, Description *string
	At                                   time.Time
}

// Target is an MCP endpoint a repository's agents use.
type Target struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	RepositoryID   uuid.UUID
	Name           string
	URL            string
	Evaluators     []string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// TargetChange is what an update changes; nil (or empty Evaluators) is left as it is.
type TargetChange struct {
	Name, URL  *string
	Evaluators []string
	At         time.Time
}

// Schedule is a target's scan schedule as stored.
type Schedule struct {
	TargetID uuid.UUID
	// Configured is false for a target that never had one.
	Configured bool
	Enabled    bool
	schedule.Schedule
	NextDueAt      *time.Time
	LastEnqueuedAt *time.Time
	UpdatedAt      time.Time
}

// DeploymentPolicy is a repository's policy: the stored one, or the default (IsDefault, revision 0).
type DeploymentPolicy struct {
	RepositoryID uuid.UUID
	Policy       reliability.Policy
	IsDefault    bool
	Revision     int
	UpdatedBy    string
	UpdatedAt    *time.Time
}

// PolicyPut replaces a policy.
type PolicyPut struct {
	Policy reliability.Policy
	// UpdatedBy names who did it; "" is the caller's key.
	UpdatedBy string
	// ExpectedRevision, when set, must be the current revision.
	ExpectedRevision *int
}

// CodeHostRepository is a repository the code host lists for an installation.
type CodeHostRepository struct {
	ExternalID    string
	FullName      string
	DefaultBranch string
	Description   string
}

// CodeHostInstallation is an installation as the code host's API describes it.
type CodeHostInstallation struct {
	ID           int64
	AccountLogin string
	Suspended    bool
}

// CodeHost reads installations from the code host's API with the app's credential. Its errors are
// ErrInstallationNotFound, ErrCodeHostUnavailable, or ctx's.
type CodeHost interface {
	Installation(ctx context.Context, id int64) (CodeHostInstallation, error)
	Repositories(ctx context.Context, id int64) ([]CodeHostRepository, error)
}

// Installation is a code-host installation linked to a workspace.
type Installation struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	InstallationID int64
	AccountLogin   string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// LinkResult is what a callback did.
type LinkResult struct {
	InstallationID int64
	AccountLogin   string
	// Linked is true when this call linked the installation, false when it was linked already.
	Linked bool
	// Added counts the repositories this call registered.
	Added int
	// Repositories are the installation's repositories in the workspace, by full name.
	Repositories []Repository
}

// DeletionCounts are the records a deletion removed, by kind.
type DeletionCounts struct {
	Repositories, Targets, Schedules, DeploymentPolicies, Runs, RunApprovals, Baselines, RunEvidence, Installations int
}

// Store persists the workspace's records. Lookups are scoped to the organization: another
// organization's rows are fault.ErrNotFound, and so is a target addressed under another repository.
type Store interface {
	// ListRepositories lists the organization's repositories, oldest first, with their target counts.
	ListRepositories(ctx context.Context, organizationID uuid.UUID) ([]Repository, error)
	// CreateRepository stores r unless its full name is taken (ErrRepositoryExists) or the
	// organization has MaxRepositories (*LimitError).
	CreateRepository(ctx context.Context, r Repository) (Repository, error)
	GetRepository(ctx context.Context, organizationID, id uuid.UUID) (Repository, error)
	// UpdateRepository applies c; ErrRepositoryExists for a taken name, ErrCodeHostRepository for
	// a rename of a code-host repository.
	UpdateRepository(ctx context.Context, organizationID, id uuid.UUID, c RepositoryChange) (Repository, error)
	// DeleteRepository deletes a repository and everything under it (targets, schedules, policy,
	// runs and their trails) in one transaction.
	DeleteRepository(ctx context.Context, organizationID, id uuid.UUID) error

	// ListTargets lists a repository's targets, oldest first.
	ListTargets(ctx context.Context, organizationID, repositoryID uuid.UUID) ([]Target, error)
	// CreateTarget stores t unless the repository has a target of its name (ErrTargetExists) or
	// MaxTargetsPerRepository (*LimitError), or the workspace has as many targets as
	// planTargets(plan) allows (*PlanLimitError; 0 allows any number). The workspace's plan is
	// read in the same transaction, which serialises the workspace's target creations.
	CreateTarget(ctx context.Context, t Target, planTargets func(plan string) int) (Target, error)
	GetTarget(ctx context.Context, organizationID, repositoryID, id uuid.UUID) (Target, error)
	UpdateTarget(ctx context.Context, organizationID, repositoryID, id uuid.UUID, c TargetChange) (Target, error)
	// DeleteTarget deletes a target with its schedule, runs and their trails.
	DeleteTarget(ctx context.Context, organizationID, repositoryID, id uuid.UUID) error

	// GetSchedule returns a target's schedule (Configured false when it has none).
	GetSchedule(ctx context.Context, organizationID, repositoryID, targetID uuid.UUID) (Schedule, error)
	// PutSchedule stores a target's schedule.
	PutSchedule(ctx context.Context, organizationID, repositoryID uuid.UUID, s Schedule) (Schedule, error)

	// GetPolicy returns a repository's stored policy, or IsDefault with the zero revision.
	GetPolicy(ctx context.Context, organizationID, repositoryID uuid.UUID) (DeploymentPolicy, error)
	// PutPolicy stores p as the next revision; *RevisionError when p.ExpectedRevision is not current.
	PutPolicy(ctx context.Context, organizationID, repositoryID uuid.UUID, p PolicyPut, at time.Time) (DeploymentPolicy, error)

	// LinkInstallation links the installation to the organization (ErrInstallationLinked when
	// another has it) and registers repos under it, in one transaction: a repository of the same
	// full name is taken over rather than duplicated, so that a replay adds nothing.
	LinkInstallation(ctx context.Context, in Installation, repos []CodeHostRepository) (LinkResult, error)
	// DeleteWorkspace deletes every agent-reliability record of the organization but its plan and
	// billing state, in one transaction, and counts them.
	DeleteWorkspace(ctx context.Context, organizationID uuid.UUID) (DeletionCounts, error)
}

// Deps are what the workspace use cases need.
type Deps struct {
	Store Store
	// CodeHost reads installations; nil answers ErrCodeHostNotConfigured.
	CodeHost CodeHost
	// CheckTarget refuses a target URL the audit engine would refuse (a *safehttp.TargetError);
	// nil checks with safehttp's default policy.
	CheckTarget func(ctx context.Context, rawURL string) error
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Service runs the workspace use cases.
type Service struct {
	store       Store
	codeHost    CodeHost
	checkTarget func(ctx context.Context, rawURL string) error
	now         func() time.Time
	log         *slog.Logger
}

// New returns the service over d.
func New(d Deps) *Service {
	s := &Service{store: d.Store, codeHost: d.CodeHost, checkTarget: d.CheckTarget, now: d.Now, log: d.Log}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.checkTarget == nil {
		s.checkTarget = func(ctx context.Context, raw string) error {
			_, err := safehttp.CheckTarget(ctx, raw, safehttp.TargetPolicy{})
			return err
		}
	}
	return s
}

// clock returns the current time as the database keeps it (microseconds, UTC).
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }
