package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

// Local is the stdio package's scoring (cmd/scoring-mcp): the same tool and prompts, scored over the
// service's HTTP API with an API key from the environment, or a trial key it obtained itself and
// keeps for later runs.
type Local struct {
	// BaseURL is the scoring service's API base (SCORING_URL).
	BaseURL string
	// APIKey is SCORING_API_KEY; empty means a kept or new trial key.
	APIKey string
	// KeyFile keeps trial keys by base URL (KeyFilePath).
	KeyFile string
	Client  *http.Client

	mu  sync.Mutex
	key string
}

// KeyFilePath is where trial keys are kept: <user config dir>/trustlayer/scoring-mcp.json.
func KeyFilePath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "trustlayer", "scoring-mcp.json"), nil
}

// keyFile is the kept trial keys, by the base URL that issued each: a key is only ever sent to the
// service it came from.
type keyFile struct {
	Keys map[string]string `json:"keys"`
}

// NewServer returns the stdio server.
func (l *Local) NewServer(version string) *sdk.Server {
	return NewServer(version, l.score)
}

func (l *Local) base() string { return strings.TrimRight(l.BaseURL, "/") }

// score posts the tool's arguments to POST /v1/score.
func (l *Local) score(ctx context.Context, _ *sdk.CallToolRequest, args json.RawMessage) (Scored, error) {
	key, err := l.apiKey(ctx)
	if err != nil {
		return Scored{}, err
	}
	status, header, body, err := l.post(ctx, "/v1/score", args, key)
	if err != nil {
		return Scored{}, err
	}
	scored := Scored{RequestID: header.Get("X-Request-Id")}
	if status != http.StatusOK {
		return scored, refusedBy(status, body)
	}
	scored.Result = body
	return scored, nil
}

// refusedBy is the service's error answer as the tool reports it: its status and its body.
func refusedBy(status int, body []byte) *apierror.Error {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil || m["detail"] == nil {
		return apierror.New(status, fmt.Sprintf("The scoring service answered %d %s", status, http.StatusText(status)))
	}
	return &apierror.Error{Status: status, Body: m}
}

// apiKey is SCORING_API_KEY when set; otherwise the key kept for this base URL, or a new trial key,
// which is kept (file mode 0600) before it is first used.
func (l *Local) apiKey(ctx context.Context) (string, error) {
	if l.APIKey != "" {
		return l.APIKey, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.key != "" {
		return l.key, nil
	}
	kept, err := readKeyFile(l.KeyFile)
	if err != nil {
		return "", err
	}
	if k := kept.Keys[l.base()]; k != "" {
		l.key = k
		return k, nil
	}
	status, _, body, err := l.post(ctx, "/v1/keys/trial", nil, "")
	if err != nil {
		return "", err
	}
	if status != http.StatusCreated {
		return "", refusedBy(status, body)
	}
	var issued struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(body, &issued); err != nil || issued.APIKey == "" {
		return "", fmt.Errorf("trial key answer without api_key")
	}
	kept.Keys[l.base()] = issued.APIKey
	if err := writeKeyFile(l.KeyFile, kept); err != nil {
		return "", fmt.Errorf("keep the trial key in %s: %w", l.KeyFile, err)
	}
	l.key = issued.APIKey
	return l.key, nil
}

func (l *Local) post(ctx context.Context, path string, body []byte, key string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base()+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := l.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil, ctx.Err()
		}
		// The user's own service address: telling them it is unreachable is the useful answer.
		return 0, nil, nil, apierror.Newf(http.StatusServiceUnavailable, "The scoring service at %s cannot be reached", l.base())
	}
	defer resp.Body.Close()
	// A score response is a few KiB; 4 MiB bounds a misbehaving server.
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, resp.Header, b, err
}

func readKeyFile(path string) (keyFile, error) {
	kept := keyFile{Keys: map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return kept, nil
	}
	if err != nil {
		return kept, err
	}
	if err := json.Unmarshal(b, &kept); err != nil {
		return kept, fmt.Errorf("%s is not a key file: %w", path, err)
	}
	if kept.Keys == nil {
		kept.Keys = map[string]string{}
	}
	return kept, nil
}

// writeKeyFile replaces the key file atomically, readable by its owner only (0600, in a 0700
// directory): it holds secrets.
func writeKeyFile(path string, kept keyFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".scoring-mcp-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone already after a successful rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
