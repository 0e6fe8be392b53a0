package app

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/codehost"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/workspace"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// ReliabilitySettings are the variables of agent reliability's workspace (repositories, targets,
// schedules, deployment policies, code-host installations), read behind EnvPrefix.
type ReliabilitySettings struct {
	// CodeHostAPIURL is the code host's App API (https://api.github.com for GitHub). With
	// CodeHostAppID and a private key it enables the installation callback; without all three
	// the callback answers 503 code_host_not_configured. https, or http to a loopback host only.
	CodeHostAPIURL string `env:"CODE_HOST_API_URL"`
	// CodeHostAppID is the app's id (the issuer of its JWTs).
	CodeHostAppID string `env:"CODE_HOST_APP_ID"`
	// CodeHostPrivateKey is the app's RSA private key, PEM (PKCS#1 or PKCS#8); or
	// CodeHostPrivateKeyFile names a file holding it (one of the two).
	CodeHostPrivateKey     string `env:"CODE_HOST_PRIVATE_KEY"`
	CodeHostPrivateKeyFile string `env:"CODE_HOST_PRIVATE_KEY_FILE"`
	// CodeHostTimeout bounds each request to the code host's API.
	CodeHostTimeout time.Duration `env:"CODE_HOST_TIMEOUT" envDefault:"10s"`

	codeHostKey *rsa.PrivateKey
}

// Validate checks the settings and reads the app's key; prefix names the variables.
func (s *ReliabilitySettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	if s.CodeHostTimeout < time.Second || s.CodeHostTimeout > 2*time.Minute {
		bad("CODE_HOST_TIMEOUT", "must be between 1s and 2m")
	}
	keyPEM := s.CodeHostPrivateKey
	if s.CodeHostPrivateKeyFile != "" {
		if keyPEM != "" {
			bad("CODE_HOST_PRIVATE_KEY_FILE", "set CODE_HOST_PRIVATE_KEY or CODE_HOST_PRIVATE_KEY_FILE, not both")
		}
		b, err := os.ReadFile(s.CodeHostPrivateKeyFile)
		if err != nil {
			bad("CODE_HOST_PRIVATE_KEY_FILE", "cannot read the file: %v", err)
		}
		keyPEM = string(b)
	}
	set := 0
	for _, v := range []string{s.CodeHostAPIURL, s.CodeHostAppID, keyPEM} {
		if v != "" {
			set++
		}
	}
	switch set {
	case 0:
		return errors.Join(errs...)
	case 3:
	default:
		bad("CODE_HOST_API_URL", "set CODE_HOST_API_URL, CODE_HOST_APP_ID and a private key together, or none of them")
		return errors.Join(errs...)
	}
	if err := checkCodeHostURL(s.CodeHostAPIURL); err != nil {
		bad("CODE_HOST_API_URL", "%v", err)
	}
	if _, err := strconv.ParseInt(s.CodeHostAppID, 10, 64); err != nil {
		bad("CODE_HOST_APP_ID", "want the app's numeric id")
	}
	key, err := parseRSAKey(keyPEM)
	if err != nil {
		bad("CODE_HOST_PRIVATE_KEY", "%v", err)
	}
	s.codeHostKey = key
	return errors.Join(errs...)
}

// checkCodeHostURL accepts https, and http only to a loopback host (a local fake of the API).
func checkCodeHostURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an absolute URL such as https://api.github.com, without credentials, query or fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return errors.New("want https (http only to a loopback host)")
}

// parseRSAKey reads a PEM RSA private key, PKCS#1 or PKCS#8, of at least 2048 bits.
func parseRSAKey(raw string) (*rsa.PrivateKey, error) {
	// A key in one environment variable often arrives with its newlines escaped.
	block, _ := pem.Decode([]byte(strings.ReplaceAll(raw, `\n`, "\n")))
	if block == nil {
		return nil, errors.New("want a PEM private key")
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("want an RSA key (RS256)")
		}
		key = rk
	} else {
		return nil, errors.New("want a PKCS#1 or PKCS#8 RSA private key")
	}
	if key.N.BitLen() < 2048 {
		return nil, fmt.Errorf("want at least 2048 bits (got %d)", key.N.BitLen())
	}
	return key, nil
}

// codeHostAdapter turns the code-host client's answers and errors into the workspace's.
type codeHostAdapter struct{ c *codehost.Client }

func codeHostError(err error) error {
	switch {
	case errors.Is(err, codehost.ErrNotFound):
		return workspace.ErrInstallationNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %v", workspace.ErrCodeHostUnavailable, err)
}

func (a codeHostAdapter) Installation(ctx context.Context, id int64) (workspace.CodeHostInstallation, error) {
	in, err := a.c.Installation(ctx, id)
	if err != nil {
		return workspace.CodeHostInstallation{}, codeHostError(err)
	}
	return workspace.CodeHostInstallation{ID: in.ID, AccountLogin: in.AccountLogin, Suspended: in.Suspended}, nil
}

func (a codeHostAdapter) Repositories(ctx context.Context, id int64) ([]workspace.CodeHostRepository, error) {
	list, err := a.c.Repositories(ctx, id)
	if err != nil {
		return nil, codeHostError(err)
	}
	out := make([]workspace.CodeHostRepository, 0, len(list))
	for _, r := range list {
		out = append(out, workspace.CodeHostRepository{
			ExternalID: strconv.FormatInt(r.ID, 10), FullName: r.FullName, DefaultBranch: r.DefaultBranch, Description: r.Description,
		})
	}
	return out, nil
}

// registerReliability adds the routes of agent reliability's workspace: repositories, targets,
// schedules, deployment policies, the code-host callback and the workspace's deletion.
func registerReliability(ctx context.Context, cfg Config, p *platform.Platform) error {
	s := cfg.Reliability
	deps := workspace.Deps{
		Store: store.NewReliabilityWorkspace(p.Pool),
		// A target passes the audit engine's own checks (registerAudits), resolved when it is saved;
		// each scan's audit checks it again.
		CheckTarget: cfg.Audits.checkTarget,
		Log:         p.Log,
	}
	if s.codeHostKey != nil {
		// The API's URL is the operator's, not a user's: it is not held to the audit targets' policy
		// (a fake of it on loopback serves tests), only to https or loopback by Validate.
		c, err := codehost.New(codehost.Config{
			APIURL: s.CodeHostAPIURL, AppID: s.CodeHostAppID, PrivateKey: s.codeHostKey,
			// The API does not redirect these calls: a redirect is an error.
			HTTPClient: codehost.HTTPClient(s.CodeHostTimeout),
		})
		if err != nil {
			return err
		}
		deps.CodeHost = codeHostAdapter{c: c}
	}
	return p.Server.Register(&verificationv1.ReliabilityWorkspaceService_ServiceDesc, api.NewReliabilityWorkspace(workspace.New(deps)),
		serve.Gateway(verificationv1.RegisterReliabilityWorkspaceServiceHandlerClient, verificationv1.NewReliabilityWorkspaceServiceClient))
}
