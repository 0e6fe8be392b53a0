package web

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/claim"
)

//go:embed claim_templates/*.html
var claimTemplates embed.FS

// claimPages are the templates of the claim pages; html/template escapes every value by its context.
var claimPages = template.Must(template.ParseFS(claimTemplates, "claim_templates/*.html"))

// ClaimCallbacks completes a code-host sign-in (claim.Service.Callback).
type ClaimCallbacks interface {
	Callback(ctx context.Context, code, state string) (claim.Result, error)
}

// ClaimPages serves the HTML of claiming a listing: GET /claim, GET /claim/start/{namespace}/{name}
// and the code host's sign-in callback. The JSON half (POST /claim/intent, /claim/start) is
// PublicService's.
type ClaimPages struct {
	claims ClaimCallbacks
	log    *slog.Logger
	// mapError turns a use-case error into the client's error (api.PublicError).
	mapError func(error) error
}

// NewClaimPages returns the pages.
func NewClaimPages(claims ClaimCallbacks, mapError func(error) error, log *slog.Logger) *ClaimPages {
	return &ClaimPages{claims: claims, mapError: mapError, log: log}
}

// CallbackPath is where the code host sends the browser back after its sign-in.
const CallbackPath = "/claim/callback"

type pageData struct {
	Title, Nonce, Notice, Refresh string
	Server, Raw, Source, Intent   string
	Namespace, Next               string
	Methods                       []string
	Verified                      bool
}

// Claim is GET /claim: query server (optional), source (default direct), intent (optional). A
// malformed value is shown back as text, with a notice: the page always answers 200.
func (c *ClaimPages) Claim(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := pageData{Title: "Claim a server listing", Source: "direct", Raw: clip(q.Get("server"), 200)}
	if s := q.Get("source"); s != "" {
		if claim.ValidLabel(s) {
			d.Source = s
		} else {
			d.Notice = "The source “" + clip(s, 80) + "” was ignored: it is not a short label."
		}
	}
	if i := q.Get("intent"); i != "" {
		if claim.ValidLabel(i) {
			d.Intent = i
		} else {
			d.Notice = "The intent “" + clip(i, 80) + "” was ignored: it is not a short label."
		}
	}
	if raw := strings.TrimSpace(q.Get("server")); raw != "" {
		if ns, name, ok := claim.ParseServer(raw); ok {
			d.Server, d.Methods = ns.Raw+"/"+name, ns.Methods()
			d.Title = "Claim " + d.Server
		} else {
			d.Notice = "“" + clip(raw, 200) + "” is not a server name: use namespace/name, with a namespace io.github.<user> or a reverse-DNS domain such as com.example."
		}
	}
	c.render(w, http.StatusOK, "claim.html", d)
}

// Start is GET /claim/start/{namespace}/{name}: query source (default direct) and next (default
// claim, the only destination). It answers 200 with a page that redirects the browser at once (a
// meta refresh, and a link) to the claim page of the server: never a 3xx, and never to a URL the
// request names.
func (c *ClaimPages) Start(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	source, next := q.Get("source"), q.Get("next")
	if source == "" {
		source = "direct"
	}
	if next == "" {
		next = "claim"
	}
	var violations []apierror.Violation
	ns, name, ok := claim.ParseServer(r.PathValue("namespace") + "/" + r.PathValue("name"))
	if !ok {
		violations = append(violations, apierror.Violation{Loc: []any{"path", "namespace"}, Msg: "Not a claimable server name", Type: "value_error"})
	}
	if !claim.ValidLabel(source) {
		violations = append(violations, apierror.Violation{Loc: []any{"query", "source"}, Msg: "1 to 64 characters of A-Z, a-z, 0-9, _, . and -", Type: "value_error"})
	}
	if next != "claim" {
		violations = append(violations, apierror.Violation{Loc: []any{"query", "next"}, Msg: "Input should be 'claim'", Type: "enum"})
	}
	if len(violations) > 0 {
		writeError(w, apierror.Validation(violations...))
		return
	}
	server := ns.Raw + "/" + name
	target := "/claim?" + url.Values{"server": {server}, "source": {source}, "intent": {"start"}}.Encode()
	c.render(w, http.StatusOK, "start.html", pageData{Title: "Claim " + server, Server: server, Next: target, Refresh: "0; url=" + target})
}

// Callback is GET /claim/callback?code=...&state=...: the end of the code host's sign-in.
func (c *ClaimPages) Callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := c.claims.Callback(r.Context(), q.Get("code"), q.Get("state"))
	if err != nil {
		var e *apierror.Error
		if !errors.As(c.mapError(err), &e) {
			if r.Context().Err() == nil {
				c.log.Error("claim callback failed", "error", err)
			}
			e = apierror.Coded(http.StatusInternalServerError, "internal_error", "Something went wrong: start again", nil)
		}
		msg, _ := e.Body["detail"].(map[string]any)["message"].(string)
		c.render(w, e.Status, "callback.html", pageData{Title: "Claim not verified", Notice: msg})
		return
	}
	d := pageData{Title: "Claim " + res.Intent.Server(), Server: res.Intent.Server(), Namespace: res.Intent.Namespace,
		Verified: res.Status == claim.StatusVerified, Notice: res.Reason}
	c.render(w, http.StatusOK, "callback.html", d)
}

// render writes a page with a fresh script nonce and a Content-Security-Policy that allows only
// that nonce's script and style, and requests to this origin.
func (c *ClaimPages) render(w http.ResponseWriter, status int, name string, d pageData) {
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	d.Nonce = base64.StdEncoding.EncodeToString(nonce)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+"'; "+
		"connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := claimPages.ExecuteTemplate(w, name, d); err != nil {
		c.log.Error("claim page", "template", name, "error", err)
	}
}

// writeError writes a JSON error body.
func writeError(w http.ResponseWriter, e *apierror.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.Body)
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
