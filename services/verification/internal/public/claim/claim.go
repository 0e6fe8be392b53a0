// Package claim lets the owner of a server listing claim it by proving control of its namespace,
// the way the official MCP registry authenticates publishers: io.github.<user> through the code
// host's sign-in (an OAuth authorization-code flow), a reverse-DNS namespace (com.example) through a
// DNS TXT record or an HTTP .well-known file carrying a token this service issues. Nothing the
// claimant sends is trusted: a claim is verified only by what the DNS, the domain or the code host
// answer. The claim secret and the token are stored as SHA-256 digests.
package claim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Statuses of a claim.
const (
	StatusPending  = "pending"
	StatusVerified = "verified"
	StatusExpired  = "expired"
)

// Errors of the claim routes besides fault's (ErrNotFound: no such claim or a wrong secret;
// ErrServerNotFound: no listing of that name).
var (
	// ErrCodeHostDisabled: the code-host sign-in is not configured on this deployment.
	ErrCodeHostDisabled = errors.New("code-host sign-in is not configured")
	// ErrStateInvalid: a sign-in callback whose state is unknown, used or too old.
	ErrStateInvalid = errors.New("unknown or expired sign-in state")
	// ErrCodeHostFailed: the code host refused the code or could not be reached.
	ErrCodeHostFailed = errors.New("the code host did not confirm the sign-in")
)

// sourceLabel bounds source and intent labels.
var sourceLabel = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidLabel reports whether s is a valid source or intent label: 1 to 64 characters of A-Z, a-z,
// 0-9, _, . and -.
func ValidLabel(s string) bool { return sourceLabel.MatchString(s) }

// Intent is a stored claim.
type Intent struct {
	ID              uuid.UUID
	Namespace, Name string
	Source, Intent  string
	SecretHash      []byte
	TokenHash       []byte
	Status          string
	VerifiedMethod  string
	VerifiedSubject string
	VerifiedAt      *time.Time
	CreatedAt       time.Time
	ExpiresAt       time.Time
}

// Server is the listing's full name.
func (i Intent) Server() string { return i.Namespace + "/" + i.Name }

// Store keeps claims.
type Store interface {
	// ServerListed reports whether the registry sync knows the server.
	ServerListed(ctx context.Context, namespace, name string) (bool, error)
	InsertClaimIntent(ctx context.Context, i Intent) error
	// ClaimIntent reads a claim; fault.ErrNotFound when there is none.
	ClaimIntent(ctx context.Context, id uuid.UUID) (Intent, error)
	// CountClaimAttempt adds one to a claim's attempts.
	CountClaimAttempt(ctx context.Context, id uuid.UUID) error
	// MarkClaimVerified verifies a pending claim (a verified one stays as it was) and returns it.
	MarkClaimVerified(ctx context.Context, id uuid.UUID, method, subject string, at time.Time) (Intent, error)
	// SetClaimState records the digest of a code-host sign-in's state.
	SetClaimState(ctx context.Context, id uuid.UUID, stateHash []byte, at time.Time) error
	// TakeClaimState returns the claim whose sign-in state has this digest, started after notBefore,
	// and forgets the state (one use); fault.ErrNotFound when there is none.
	TakeClaimState(ctx context.Context, stateHash []byte, notBefore time.Time) (Intent, error)
}

// Resolver looks up TXT records.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Fetcher fetches the HTTP proof (through the SSRF guard); at most a few KiB of body.
type Fetcher interface {
	Fetch(ctx context.Context, url string) ([]byte, error)
}

// CodeHost is the code host's sign-in.
type CodeHost interface {
	// AuthorizeURL is where the browser signs in, carrying state.
	AuthorizeURL(state string) string
	// Login exchanges an authorization code for the account name it was issued to.
	Login(ctx context.Context, code string) (string, error)
}

// Deps are what the service needs; a nil CodeHost turns the code-host method off.
type Deps struct {
	Store    Store
	Resolver Resolver
	Fetcher  Fetcher
	CodeHost CodeHost
	// TTL is how long a claim may be verified after its intent; StateTTL how long a sign-in may take.
	TTL, StateTTL time.Duration
	// HTTPOrigin builds the origin of a domain's HTTP proof ("https://" + domain by default).
	HTTPOrigin func(domain string) string
}

// Service records and verifies claims.
type Service struct {
	d   Deps
	now func() time.Time
}

// New returns the service.
func New(d Deps) *Service {
	if d.HTTPOrigin == nil {
		d.HTTPOrigin = func(domain string) string { return "https://" + domain }
	}
	return &Service{d: d, now: time.Now}
}

// NewIntent is a request to claim a listing.
type NewIntent struct {
	Server, Source, Intent string
}

// Issued is a recorded claim with its secrets, shown once.
type Issued struct {
	Intent    Intent
	Namespace Namespace
	Secret    string
	// Token is "" for a code-host claim, which publishes nothing.
	Token string
	// DNSName and DNSValue are the TXT record, HTTPURL the .well-known file (domain namespaces).
	DNSName, DNSValue, HTTPURL string
}

// Result is a claim after a check.
type Result struct {
	Intent Intent
	Status string
	Method string
	// Reason says why a check did not verify the claim.
	Reason string
	// AuthorizeURL is where the browser signs in (code host).
	AuthorizeURL string
}

// RecordIntent validates the request, checks that the listing exists and issues the claim.
func (s *Service) RecordIntent(ctx context.Context, n NewIntent) (Issued, error) {
	var problems []fault.Problem
	ns, name, ok := ParseServer(strings.TrimSpace(n.Server))
	switch {
	case strings.TrimSpace(n.Server) == "":
		problems = append(problems, fault.Problem{Field: "server", Type: "missing", Message: "Field required"})
	case !ok:
		problems = append(problems, fault.Problem{Field: "server", Type: "value_error",
			Message: "A server name namespace/name whose namespace is io.github.<user> or a reverse-DNS domain (com.example)"})
	}
	if n.Source == "" {
		n.Source = "direct"
	}
	if !ValidLabel(n.Source) {
		problems = append(problems, fault.Problem{Field: "source", Type: "value_error", Message: "1 to 64 characters of A-Z, a-z, 0-9, _, . and -"})
	}
	if n.Intent != "" && !ValidLabel(n.Intent) {
		problems = append(problems, fault.Problem{Field: "intent", Type: "value_error", Message: "At most 64 characters of A-Z, a-z, 0-9, _, . and -"})
	}
	if len(problems) > 0 {
		return Issued{}, &fault.ValidationError{Problems: problems}
	}
	listed, err := s.d.Store.ServerListed(ctx, ns.Raw, name)
	if err != nil {
		return Issued{}, err
	}
	if !listed {
		return Issued{}, fault.ErrServerNotFound
	}
	secret, secretHash := newSecret("cs_")
	token, tokenHash := newSecret("")
	now := s.now()
	in := Intent{
		ID: uuid.New(), Namespace: ns.Raw, Name: name, Source: n.Source, Intent: n.Intent,
		SecretHash: secretHash, TokenHash: tokenHash, Status: StatusPending, CreatedAt: now, ExpiresAt: now.Add(s.d.TTL),
	}
	if err := s.d.Store.InsertClaimIntent(ctx, in); err != nil {
		return Issued{}, err
	}
	out := Issued{Intent: in, Namespace: ns, Secret: secret}
	if ns.Domain != "" {
		out.Token = token
		out.DNSName, out.DNSValue = DNSRecordName(ns.Domain), DNSRecordValue(token)
		out.HTTPURL = s.d.HTTPOrigin(ns.Domain) + WellKnownPath
	}
	return out, nil
}

// Start checks the claim's proof by method now, or for the code host returns the sign-in URL.
// A wrong secret is fault.ErrNotFound, as an unknown claim is.
func (s *Service) Start(ctx context.Context, rawID, secret, method string) (Result, error) {
	var problems []fault.Problem
	id, err := uuid.Parse(strings.TrimSpace(rawID))
	if err != nil {
		problems = append(problems, fault.Problem{Field: "claim_id", Type: "uuid_parsing", Message: "Input should be a valid UUID"})
	}
	if secret == "" {
		problems = append(problems, fault.Problem{Field: "claim_secret", Type: "missing", Message: "Field required"})
	}
	if method != MethodCodeHost && method != MethodDNS && method != MethodHTTP {
		problems = append(problems, fault.Problem{Field: "method", Type: "enum", Message: "Input should be code_host, dns or http"})
	}
	if len(problems) > 0 {
		return Result{}, &fault.ValidationError{Problems: problems}
	}
	in, err := s.d.Store.ClaimIntent(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if !hashMatches(in.SecretHash, secret) {
		return Result{}, fault.ErrNotFound
	}
	ns, ok := ParseNamespace(in.Namespace)
	if !ok {
		return Result{}, fault.ErrNotFound
	}
	if !ns.Accepts(method) {
		return Result{}, fault.Invalid("method", "value_error", "This namespace is proved by: "+strings.Join(ns.Methods(), ", "))
	}
	res := Result{Intent: in, Status: in.Status, Method: method}
	switch {
	case in.Status == StatusVerified:
		res.Method = in.VerifiedMethod
		return res, nil
	case !s.now().Before(in.ExpiresAt):
		res.Status, res.Reason = StatusExpired, "The claim expired: record a new intent"
		return res, nil
	}
	if err := s.d.Store.CountClaimAttempt(ctx, in.ID); err != nil {
		return Result{}, err
	}
	switch method {
	case MethodCodeHost:
		if s.d.CodeHost == nil {
			return Result{}, ErrCodeHostDisabled
		}
		state, stateHash := newSecret("")
		if err := s.d.Store.SetClaimState(ctx, in.ID, stateHash, s.now()); err != nil {
			return Result{}, err
		}
		res.AuthorizeURL = s.d.CodeHost.AuthorizeURL(state)
		res.Reason = "Sign in to the code host as " + ns.Login + " to verify the claim"
		return res, nil
	case MethodDNS:
		res.Reason = s.checkDNS(ctx, ns.Domain, in.TokenHash)
	case MethodHTTP:
		res.Reason = s.checkHTTP(ctx, ns.Domain, in.TokenHash)
	}
	if res.Reason != "" {
		return res, nil
	}
	return s.verified(ctx, in.ID, method, ns.Domain)
}

// Callback completes a code-host sign-in: code and state are the callback's query.
func (s *Service) Callback(ctx context.Context, code, state string) (Result, error) {
	if code == "" || state == "" || len(code) > 512 || len(state) > 128 {
		return Result{}, ErrStateInvalid
	}
	sum := sha256.Sum256([]byte(state))
	in, err := s.d.Store.TakeClaimState(ctx, sum[:], s.now().Add(-s.d.StateTTL))
	if errors.Is(err, fault.ErrNotFound) {
		return Result{}, ErrStateInvalid
	}
	if err != nil {
		return Result{}, err
	}
	res := Result{Intent: in, Status: in.Status, Method: MethodCodeHost}
	ns, ok := ParseNamespace(in.Namespace)
	if !ok || ns.Login == "" || s.d.CodeHost == nil {
		return Result{}, ErrStateInvalid
	}
	if in.Status == StatusVerified {
		return res, nil
	}
	if !s.now().Before(in.ExpiresAt) {
		res.Status, res.Reason = StatusExpired, "The claim expired: record a new intent"
		return res, nil
	}
	login, err := s.d.CodeHost.Login(ctx, code)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, ErrCodeHostFailed
	}
	if !strings.EqualFold(login, ns.Login) {
		res.Reason = "You signed in as " + login + ", and the namespace belongs to " + ns.Login
		return res, nil
	}
	return s.verified(ctx, in.ID, MethodCodeHost, login)
}

func (s *Service) verified(ctx context.Context, id uuid.UUID, method, subject string) (Result, error) {
	in, err := s.d.Store.MarkClaimVerified(ctx, id, method, subject, s.now())
	if err != nil {
		return Result{}, err
	}
	return Result{Intent: in, Status: in.Status, Method: in.VerifiedMethod}, nil
}

// checkDNS looks for the token's TXT record; it returns "" when found, or why not.
func (s *Service) checkDNS(ctx context.Context, domain string, tokenHash []byte) string {
	name := DNSRecordName(domain)
	records, err := s.d.Resolver.LookupTXT(ctx, name)
	if err != nil {
		return "No TXT record found at " + name
	}
	for i, r := range records {
		if i >= 32 {
			break
		}
		if token, ok := strings.CutPrefix(strings.TrimSpace(r), "mcp-claim="); ok && hashMatches(tokenHash, token) {
			return ""
		}
	}
	return "The TXT records at " + name + " do not carry this claim's token"
}

// checkHTTP fetches the .well-known file; it returns "" when it holds the token, or why not.
func (s *Service) checkHTTP(ctx context.Context, domain string, tokenHash []byte) string {
	u := s.d.HTTPOrigin(domain) + WellKnownPath
	body, err := s.d.Fetcher.Fetch(ctx, u)
	if err != nil {
		return "Could not fetch " + u + ": " + err.Error()
	}
	if !hashMatches(tokenHash, strings.TrimSpace(string(body))) {
		return u + " does not hold this claim's token"
	}
	return ""
}

// newSecret returns a random 32-byte secret (base64url, after prefix) and its SHA-256 digest.
func newSecret(prefix string) (string, []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	s := prefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(s))
	return s, sum[:]
}

// hashMatches compares candidate's digest with want in constant time.
func hashMatches(want []byte, candidate string) bool {
	sum := sha256.Sum256([]byte(candidate))
	return len(want) == len(sum) && subtle.ConstantTimeCompare(want, sum[:]) == 1
}
