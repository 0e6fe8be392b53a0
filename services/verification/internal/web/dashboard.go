package web

import (
	"bytes"
	_ "embed"
	"html/template"
	"strconv"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

// DashboardContentType is the dashboard page's media type.
const DashboardContentType = "text/html; charset=utf-8"

//go:embed dashboard.html
var dashboardSource string

// dashboardPage is the agent reliability dashboard. html/template escapes every value for its
// context (text, attribute, URL); the page loads nothing from elsewhere and runs no script.
var dashboardPage = template.Must(template.New("dashboard").Funcs(template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"limit": func(n int) string {
		if n == 0 {
			return "unlimited"
		}
		return strconv.Itoa(n)
	},
}).Parse(dashboardSource))

// RenderDashboard renders the workspace's dashboard page.
func RenderDashboard(d billing.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	if err := dashboardPage.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
