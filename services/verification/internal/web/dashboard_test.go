package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
)

// TestRenderDashboardEscapes: every value a user named is escaped for its context, and the limits
// of an unlimited plan read as such.
func TestRenderDashboardEscapes(t *testing.T) {
	t.Parallel()
	evil := `<script>alert(1)</script>`
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	run := &billing.RunBrief{ID: uuid.New(), State: `needs_approval" onmouseover="x`, Decision: "needs_approval", Trigger: "ci", CreatedAt: now}
	page, err := web.RenderDashboard(billing.Dashboard{
		OrganizationID: uuid.New(), OrganizationName: evil, GeneratedAt: now,
		Status: billing.Status{Workspace: billing.Workspace{Plan: "enterprise", Status: "active"}, Limits: reliability.Plans["enterprise"]},
		Repositories: []billing.DashboardRepository{{ID: uuid.New(), FullName: evil, Provider: "manual", DefaultBranch: "main",
			Targets: []billing.DashboardTarget{{ID: uuid.New(), Name: evil, URL: `javascript:alert(1)`, Evaluators: []string{"mcp"}, Latest: run}}}},
		HeldRuns: []billing.HeldRun{{Run: *run, Repository: evil, Target: evil, Reasons: []string{evil}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	if strings.Contains(s, "<script") || strings.Contains(s, `" onmouseover`) || strings.Contains(s, "<a ") {
		t.Fatalf("unescaped markup in the page:\n%s", s)
	}
	if n := strings.Count(s, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 5 {
		t.Errorf("the name appears escaped %d times, want at least 5 (title, header, repository, target, held run)", n)
	}
	if !strings.Contains(s, "unlimited") || !strings.Contains(s, "Held runs (1)") {
		t.Errorf("the page lacks the unlimited plan or the held run count")
	}
}
