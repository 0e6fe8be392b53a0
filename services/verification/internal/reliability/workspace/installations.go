package workspace

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Setup actions of a code-host callback.
const (
	SetupInstall = "install"
	SetupUpdate  = "update"
)

// maxState bounds a callback's state.
const maxState = 512

// Callback is what the code host's setup redirect carried to the caller.
type Callback struct {
	InstallationID int64
	SetupAction    string
	State          *string
}

// CompleteInstallation links a code-host installation to the workspace and registers its
// repositories. Nothing in the callback but the installation's id is believed: the installation
// and its repositories are read from the code host's API with the app's own credential, which
// sees only the app's installations. A replay links nothing new and adds no repository twice; an
// installation linked to another workspace is ErrInstallationLinked.
func (s *Service) CompleteInstallation(ctx context.Context, org uuid.UUID, c Callback) (LinkResult, error) {
	var problems []fault.Problem
	if c.InstallationID <= 0 {
		problems = append(problems, fault.Problem{Field: "installation_id", Message: "Input should be greater than 0", Type: "greater_than"})
	}
	switch strings.TrimSpace(c.SetupAction) {
	case SetupInstall, SetupUpdate:
	case "":
		problems = append(problems, fault.Problem{Field: "setup_action", Message: "Field required", Type: "missing"})
	default:
		problems = append(problems, fault.Problem{Field: "setup_action", Message: "Input should be 'install' or 'update'", Type: "enum"})
	}
	if c.State != nil && (len(*c.State) > maxState || !utf8.ValidString(*c.State)) {
		problems = append(problems, fault.Problem{Field: "state", Message: "String should have at most 512 characters", Type: "string_too_long"})
	}
	if err := invalid(problems); err != nil {
		return LinkResult{}, err
	}
	if s.codeHost == nil {
		return LinkResult{}, ErrCodeHostNotConfigured
	}
	inst, err := s.codeHost.Installation(ctx, c.InstallationID)
	if err != nil {
		return LinkResult{}, s.codeHostFailed(ctx, err)
	}
	if inst.Suspended {
		return LinkResult{}, ErrInstallationSuspended
	}
	repos, err := s.codeHost.Repositories(ctx, c.InstallationID)
	if err != nil {
		return LinkResult{}, s.codeHostFailed(ctx, err)
	}
	// Keep only names this service would accept by hand; the code host's are, but its answer is
	// input all the same.
	kept := repos[:0]
	for _, r := range repos {
		name, p := checkFullName(r.FullName)
		if p != nil || r.ExternalID == "" {
			s.log.WarnContext(ctx, "code host listed a repository with an unusable name or id; skipped", "installation_id", c.InstallationID)
			continue
		}
		r.FullName = name
		if b, p := checkBranch(r.DefaultBranch); p == nil {
			r.DefaultBranch = b
		} else {
			r.DefaultBranch = "main"
		}
		r.Description, _ = checkDescription(truncateRunes(r.Description, maxDescription))
		kept = append(kept, r)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return LinkResult{}, err
	}
	at := s.clock()
	return s.store.LinkInstallation(ctx, Installation{
		ID: id, OrganizationID: org, InstallationID: inst.ID, AccountLogin: truncateRunes(inst.AccountLogin, 200),
		CreatedAt: at, UpdatedAt: at,
	}, kept)
}

// codeHostFailed logs why the code host's API could not be read (the caller sees only
// code_host_unavailable) and returns err.
func (s *Service) codeHostFailed(ctx context.Context, err error) error {
	if errors.Is(err, ErrCodeHostUnavailable) {
		s.log.WarnContext(ctx, "code host API unavailable", "error", err.Error())
	}
	return err
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// DeleteWorkspace deletes every agent-reliability record of the workspace once confirm is
// DeletionConfirmation; the plan and billing state stay (a paid subscription is cancelled through
// billing, not by deleting data).
func (s *Service) DeleteWorkspace(ctx context.Context, org uuid.UUID, confirm string) (DeletionCounts, error) {
	if confirm != DeletionConfirmation {
		return DeletionCounts{}, fault.Invalid("confirm", "value_error", "Input should be '"+DeletionConfirmation+"'")
	}
	return s.store.DeleteWorkspace(ctx, org)
}
