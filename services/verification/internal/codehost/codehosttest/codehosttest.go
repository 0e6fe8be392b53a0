// Package codehosttest is a loopback fake of the code host's App API for tests: it checks the
// app's RS256 JWT against the key it generated, mints installation tokens, and lists each
// installation's repositories in pages, as GitHub's API does.
package codehosttest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AppID is the fake app's id.
const AppID = "424242"

// Repo is a repository of a fake installation.
type Repo struct {
	ID            int64
	FullName      string
	DefaultBranch string
	Description   string
}

// Server is the fake API.
type Server struct {
	*httptest.Server
	// Key is the app's private key; KeyPEM its PKCS#1 PEM.
	Key    *rsa.PrivateKey
	KeyPEM string

	mu            sync.Mutex
	installations map[int64]*installation
	tokens        map[string]int64
	requests      []string
	failing       bool
}

type installation struct {
	login     string
	suspended bool
	repos     []Repo
}

// New starts the fake API; it stops with the test.
func New(t testing.TB) *Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Key:           key,
		KeyPEM:        string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
		installations: map[int64]*installation{},
		tokens:        map[string]int64{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/installations/{id}", s.app(s.getInstallation))
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.app(s.createToken))
	mux.HandleFunc("GET /installation/repositories", s.listRepositories)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		failing := s.failing
		s.mu.Unlock()
		if failing {
			http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// AddInstallation adds (or replaces) an installation of the app on account login.
func (s *Server) AddInstallation(id int64, login string, repos ...Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installations[id] = &installation{login: login, repos: repos}
}

// Suspend marks an installation suspended.
func (s *Server) Suspend(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installations[id].suspended = true
}

// SetFailing makes every request answer 502 while on.
func (s *Server) SetFailing(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

// Requests returns the "METHOD /path" of every request so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// app checks the app's JWT: RS256 by the app's key, issuer AppID, at most ten minutes long.
func (s *Server) app(next func(http.ResponseWriter, *http.Request, *installation, int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &s.Key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(AppID), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
		if !ok || err != nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded"})
			return
		}
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		s.mu.Lock()
		in := s.installations[id]
		s.mu.Unlock()
		if err != nil || in == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
			return
		}
		next(w, r, in, id)
	}
}

func (s *Server) getInstallation(w http.ResponseWriter, _ *http.Request, in *installation, id int64) {
	s.mu.Lock()
	body := map[string]any{"id": id, "app_id": AppID, "account": map[string]any{"login": in.login, "type": "Organization"},
		"suspended_at": nil}
	if in.suspended {
		body["suspended_at"] = "2026-01-01T00:00:00Z"
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) createToken(w http.ResponseWriter, _ *http.Request, _ *installation, id int64) {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	tok := "ghs_" + hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = id
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
}

func (s *Server) listRepositories(w http.ResponseWriter, r *http.Request) {
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	id, ok := s.tokens[raw]
	var repos []Repo
	if ok {
		repos = append(repos, s.installations[id].repos...)
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if perPage < 1 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	from := min((page-1)*perPage, len(repos))
	to := min(from+perPage, len(repos))
	items := make([]map[string]any, 0, to-from)
	for _, rp := range repos[from:to] {
		items = append(items, map[string]any{"id": rp.ID, "full_name": rp.FullName, "default_branch": rp.DefaultBranch,
			"description": rp.Description, "private": true})
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(repos), "repositories": items})
}
