package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/codehost/codehosttest"
)

// wsCodeHost starts a fake code-host API and the environment that points the service at it.
func wsCodeHost(t *testing.T) (*codehosttest.Server, map[string]string) {
	t.Helper()
	fake := codehosttest.New(t)
	return fake, map[string]string{
		"VERIFICATION_CODE_HOST_API_URL":     fake.URL,
		"VERIFICATION_CODE_HOST_APP_ID":      codehosttest.AppID,
		"VERIFICATION_CODE_HOST_PRIVATE_KEY": fake.KeyPEM,
	}
}

type wsInstallation struct {
	InstallationID    string           `json:"installation_id"`
	AccountLogin      string           `json:"account_login"`
	Linked            bool             `json:"linked"`
	RepositoriesAdded int              `json:"repositories_added"`
	Repositories      []map[string]any `json:"repositories"`
}

func TestReliabilityWorkspaceInstallationNotConfigured(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, h := s.wsWorkspace("No code host")
	r := s.Do("POST", wsPrefix+"/code-host/installations/callback", map[string]any{"installation_id": 1, "setup_action": "install"}, h)
	if code, detail := detailCode(t, r.Body); r.Status != 503 || code != "code_host_not_configured" || detail["message"] == "" {
		t.Errorf("callback without a code host: got %d %s, want 503 code_host_not_configured", r.Status, r.Body)
	}
}

func TestReliabilityWorkspaceInstallation(t *testing.T) {
	t.Parallel()
	fake, env := wsCodeHost(t)
	var repos []codehosttest.Repo
	for i := range 120 { // two pages of the listing
		repos = append(repos, codehosttest.Repo{ID: int64(5000 + i), FullName: fmt.Sprintf("acme/agent-%03d", i), DefaultBranch: "main", Description: "agent"})
	}
	repos[0].DefaultBranch = "trunk"
	fake.AddInstallation(77, "acme", repos...)
	fake.AddInstallation(78, "suspended-co", codehosttest.Repo{ID: 1, FullName: "suspended-co/x", DefaultBranch: "main"})
	fake.Suspend(78)
	s := startService(t, env)
	org, h := s.wsWorkspace("Installers")
	_, other := s.wsWorkspace("Latecomers")
	path := wsPrefix + "/code-host/installations/callback"

	// A repository added by hand under a name the installation lists is taken over, not duplicated.
	manual := s.wsRepository(h, "acme/agent-001")

	var res wsInstallation
	// The body's claims beyond the id are not believed: the repositories come from the API.
	s.Must("POST", path, map[string]any{"installation_id": 77, "setup_action": "install", "state": "opaque",
		"repositories": []string{"evil/repo"}, "account_login": "evil"}, h, 200).Decode(t, &res)
	if res.InstallationID != "77" || res.AccountLogin != "acme" || !res.Linked || res.RepositoriesAdded != 119 || len(res.Repositories) != 120 {
		t.Fatalf("first callback: got linked %v, account %q, added %d, %d repositories; want linked, acme, 119 added of 120",
			res.Linked, res.AccountLogin, res.RepositoriesAdded, len(res.Repositories))
	}
	first := res.Repositories[0]
	if first["full_name"] != "acme/agent-000" || first["provider"] != "code-host" || first["external_id"] != "5000" ||
		first["installation_id"] != "77" || first["default_branch"] != "trunk" {
		t.Errorf("a registered repository: got %v", first)
	}
	taken := res.Repositories[1]
	if taken["id"] != manual || taken["provider"] != "code-host" || taken["external_id"] != "5001" {
		t.Errorf("the repository added by hand: got %v, want it taken over (id %s)", taken, manual)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1 AND full_name LIKE 'evil%'`, org); n != 0 {
		t.Errorf("repositories named by the body: got %d, want 0", n)
	}
	wantCalls := []string{"GET /app/installations/77", "POST /app/installations/77/access_tokens", "GET /installation/repositories", "GET /installation/repositories"}
	if got := fake.Requests(); !slices.Equal(got, wantCalls) {
		t.Errorf("code host requests: got %v, want %v", got, wantCalls)
	}

	// A replay (or an update) changes nothing: linked false, nothing added, no duplicate rows.
	before := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1`, org)
	stamp := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1 AND updated_at = created_at`, org)
	for _, action := range []string{"install", "update"} {
		s.Must("POST", path, map[string]any{"installation_id": "77", "setup_action": action}, h, 200).Decode(t, &res)
		if res.Linked || res.RepositoriesAdded != 0 || len(res.Repositories) != 120 {
			t.Errorf("replay (%s): got linked %v, added %d, %d repositories; want not linked, 0 added, 120", action, res.Linked, res.RepositoriesAdded, len(res.Repositories))
		}
	}
	if after := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1`, org); after != before || after != 120 {
		t.Errorf("repositories after replays: got %d, want %d", after, before)
	}
	if again := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1 AND updated_at = created_at`, org); again != stamp {
		t.Errorf("replays rewrote %d repositories; want none", stamp-again)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_installations WHERE installation_id = 77`); n != 1 {
		t.Errorf("installation rows: got %d, want 1", n)
	}

	// A repository the installation gains is added by the next callback.
	fake.AddInstallation(77, "acme", append(repos, codehosttest.Repo{ID: 9999, FullName: "acme/new-agent", DefaultBranch: "main"})...)
	s.Must("POST", path, map[string]any{"installation_id": 77, "setup_action": "update"}, h, 200).Decode(t, &res)
	if res.Linked || res.RepositoriesAdded != 1 || len(res.Repositories) != 121 {
		t.Errorf("update with a new repository: got linked %v, added %d, %d repositories", res.Linked, res.RepositoriesAdded, len(res.Repositories))
	}

	// Another workspace cannot take the installation.
	r := s.Do("POST", path, map[string]any{"installation_id": 77, "setup_action": "install"}, other)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "installation_linked_elsewhere" {
		t.Errorf("the installation from another workspace: got %d %s, want 409 installation_linked_elsewhere", r.Status, r.Body)
	}
	if got := s.Must("GET", wsPrefix+"/repositories", nil, other, 200); string(got.Body) != "[]" {
		t.Errorf("the other workspace's repositories: got %s, want []", got.Body)
	}

	// A code-host repository keeps the code host's name.
	r = s.Do("PUT", wsPrefix+"/repositories/"+manual, map[string]any{"full_name": "acme/renamed"}, h)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "code_host_repository_rename" {
		t.Errorf("rename of a code-host repository: got %d %s, want 409 code_host_repository_rename", r.Status, r.Body)
	}

	r = s.Do("POST", path, map[string]any{"installation_id": 78, "setup_action": "install"}, other)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "installation_suspended" {
		t.Errorf("a suspended installation: got %d %s, want 409 installation_suspended", r.Status, r.Body)
	}
	r = s.Do("POST", path, map[string]any{"installation_id": 404404, "setup_action": "install"}, other)
	if r.Status != 422 || !wsHasViolation(t, r.Body, "body.installation_id", "installation_not_found") {
		t.Errorf("an unknown installation: got %d %s, want 422 installation_not_found", r.Status, r.Body)
	}
	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"no id", map[string]any{"setup_action": "install"}, "body.installation_id"},
		{"negative id", map[string]any{"installation_id": -3, "setup_action": "install"}, "body.installation_id"},
		{"no action", map[string]any{"installation_id": 77}, "body.setup_action"},
		{"request action", map[string]any{"installation_id": 77, "setup_action": "delete"}, "body.setup_action"},
		{"long state", map[string]any{"installation_id": 77, "setup_action": "install", "state": strings.Repeat("s", 513)}, "body.state"},
	} {
		r := s.Do("POST", path, tt.body, h)
		if r.Status != 422 || !wsHasViolation(t, r.Body, tt.loc, "") {
			t.Errorf("%s: got %d %s, want 422 locating %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}

	// The code host down: 503 code_host_unavailable, nothing written.
	fake.SetFailing(true)
	r = s.Do("POST", path, map[string]any{"installation_id": 77, "setup_action": "update"}, h)
	if code, _ := detailCode(t, r.Body); r.Status != 503 || code != "code_host_unavailable" || strings.Contains(string(r.Body), "127.0.0.1") {
		t.Errorf("code host down: got %d %s, want 503 code_host_unavailable without its address", r.Status, r.Body)
	}
	fake.SetFailing(false)
	if logs := s.Logs.String(); !strings.Contains(logs, "code host API unavailable") || strings.Contains(logs, strings.TrimPrefix(fake.URL, "http://")) {
		t.Errorf("logs: want the code host's failure logged without its address")
	}

	// Deleting the workspace unlinks the installation, which another workspace may then link.
	var del struct {
		Deleted map[string]int `json:"deleted"`
	}
	s.Must("POST", wsPrefix+"/workspace/delete-all", map[string]any{"confirm": "delete all agent reliability data"}, h, http.StatusOK).Decode(t, &del)
	if del.Deleted["installations"] != 1 || del.Deleted["repositories"] != 121 {
		t.Errorf("deletion: got %v, want 1 installation and 121 repositories", del.Deleted)
	}
	s.Must("POST", path, map[string]any{"installation_id": 77, "setup_action": "install"}, other, 200).Decode(t, &res)
	if !res.Linked || res.RepositoriesAdded != 121 {
		t.Errorf("link after the first workspace's deletion: got linked %v, added %d", res.Linked, res.RepositoriesAdded)
	}
}

// TestReliabilityWorkspaceConcurrency sends racing requests: target creations past the plan's
// limit, replayed callbacks, and two workspaces claiming one installation.
func TestReliabilityWorkspaceConcurrency(t *testing.T) {
	t.Parallel()
	fake, env := wsCodeHost(t)
	fake.AddInstallation(501, "acme", codehosttest.Repo{ID: 1, FullName: "acme/a", DefaultBranch: "main"},
		codehosttest.Repo{ID: 2, FullName: "acme/b", DefaultBranch: "main"})
	fake.AddInstallation(502, "contested", codehosttest.Repo{ID: 3, FullName: "contested/c", DefaultBranch: "main"})
	s := startService(t, env)
	org, h := s.wsWorkspace("Racers")
	orgB, hB := s.wsWorkspace("Rivals")
	repo := s.wsRepository(h, "acme/racing")

	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses <- s.Do("POST", wsPrefix+"/repositories/"+repo+"/targets", map[string]any{"name": fmt.Sprint("t", i), "url": wsURL(i)}, h).Status
		})
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if got[201] != 3 || got[402] != n-3 {
		t.Errorf("%d racing creations on the free plan: got statuses %v, want 3 created and %d refused", n, got, n-3)
	}
	if c := s.Count(`SELECT count(*) FROM reliability_targets WHERE organization_id = $1`, org); c != 3 {
		t.Errorf("targets stored: got %d, want 3", c)
	}

	type answer struct {
		status int
		linked bool
	}
	answers := make(chan answer, n)
	for range n {
		wg.Go(func() {
			r := s.Do("POST", wsPrefix+"/code-host/installations/callback", map[string]any{"installation_id": 501, "setup_action": "install"}, h)
			var res wsInstallation
			if r.Status == 200 {
				_ = json.Unmarshal(r.Body, &res)
			}
			answers <- answer{r.Status, res.Linked}
		})
	}
	wg.Wait()
	close(answers)
	linked := 0
	for a := range answers {
		if a.status != 200 {
			t.Errorf("a replayed callback: got %d, want 200", a.status)
		}
		if a.linked {
			linked++
		}
	}
	if linked != 1 {
		t.Errorf("racing replays: %d answered linked, want exactly 1", linked)
	}
	if c := s.Count(`SELECT count(*) FROM reliability_repositories WHERE organization_id = $1 AND provider = 'code-host'`, org); c != 2 {
		t.Errorf("registered repositories: got %d, want 2", c)
	}

	// Two workspaces race for one installation: one gets it, every call of the other is 409.
	type claim struct {
		org    string
		status int
	}
	claims := make(chan claim, 2*n)
	for i := range 2 * n {
		o, hh := org, h
		if i%2 == 1 {
			o, hh = orgB, hB
		}
		wg.Go(func() {
			claims <- claim{o, s.Do("POST", wsPrefix+"/code-host/installations/callback", map[string]any{"installation_id": 502, "setup_action": "install"}, hh).Status}
		})
	}
	wg.Wait()
	close(claims)
	winners := map[string]bool{}
	for c := range claims {
		switch c.status {
		case 200:
			winners[c.org] = true
		case 409:
		default:
			t.Errorf("a contested callback: got %d, want 200 or 409", c.status)
		}
	}
	if len(winners) != 1 {
		t.Errorf("contested installation: %d workspaces got it, want exactly 1", len(winners))
	}
	if c := s.Count(`SELECT count(*) FROM reliability_repositories WHERE full_name = 'contested/c' AND organization_id IN ($1, $2)`, org, orgB); c != 1 {
		t.Errorf("contested repository rows: got %d, want 1", c)
	}
}
