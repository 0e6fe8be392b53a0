// Package watch is the use case of the watch API: watch API keys, watches (a target URL audited
// again and again with one evaluator), policies that say when a run is an alert, the runs, their
// scheduler, and the alerts delivered through the organization's webhook endpoints.
package watch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
)

// Scopes of a watch API key.
const (
	ScopeRead  = "watch:read"
	ScopeWrite = "watch:write"
)

// Evaluators: the audit a watch runs.
const (
	EvaluatorConformance = audits.KindConformance // "mcp"
	EvaluatorReadiness   = audits.KindReadiness   // "readiness"
)

// Watch states. Archived is a soft delete: an archived watch reads as 404 and frees its pair.
const (
	StatusActive   = "active"
	StatusPaused   = "paused"
	StatusArchived = "archived"
)

// Run states and triggers.
const (
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"

	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
)

// Key is a watch API key; its secret exists only in the answer that issued it.
type Key struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Name           string
	Prefix         string
	Scopes         []string
	CreatedAt      time.Time
	ExpiresAt      *time.Time
	RevokedAt      *time.Time
}

// Caller is the authenticated holder of a watch key.
type Caller struct {
	OrganizationID uuid.UUID
	KeyID          uuid.UUID
	Scopes         []string
}

// Watch is a target audited at an interval.
type Watch struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	TargetURL      string
	// TargetHost is the URL's host, by which runs of one host are spread.
	TargetHost      string
	Evaluator       string
	Status          string
	PolicyID        *uuid.UUID
	IntervalSeconds int
	NextRunAt       time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// LastRun is the latest run, when read with it.
	LastRun *Run
}

// Rules say when a run is an alert: a run that breaks any rule it sets.
type Rules struct {
	MinScore          *int     `json:"minScore,omitempty"`
	RequiredChecks    []string `json:"requiredChecks,omitempty"`
	ForbiddenFindings []string `json:"forbiddenFindings,omitempty"`
	SurfaceChanges    []string `json:"surfaceChanges,omitempty"`
	NoWorseVerdict    *bool    `json:"noWorseVerdict,omitempty"`
}

// Policy is a named set of rules of an organization.
type Policy struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Name           string
	Rules          Rules
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Run is one audit of a watch.
type Run struct {
	ID          uuid.UUID
	WatchID     uuid.UUID
	Status      string
	Trigger     string
	StartedAt   time.Time
	FinishedAt  *time.Time
	AuditID     *uuid.UUID
	Verdict     string
	Score       *int
	SurfaceHash string
	// Surface is the run's tool listing (surface.Listing JSON: schemas and descriptions, which the
	// report only hashes), compared with the next run's; read for that comparison only.
	Surface json.RawMessage
	Alert   bool
	Reasons []string
	// Changes are the surface changes since the previous run (surface.Change JSON objects).
	Changes []json.RawMessage
	Error   string
}

// Auditor runs and stores audits: the audit routes' use case, with the watch's organization as the
// report's holder.
type Auditor interface {
	Run(ctx context.Context, kind string, target audit.Target, h audits.Holder) (audits.Record, error)
}
