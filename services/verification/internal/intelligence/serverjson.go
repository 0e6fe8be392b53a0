package intelligence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// namePattern is the official registry's server name rule (server.json schema, "name"): a reverse-DNS
// namespace, one slash, a name. Length 3..200.
var namePattern = regexp.MustCompile(`^([a-zA-Z0-9.-]+)/([a-zA-Z0-9._-]+)$`)

// ParseName splits a server.json name into its key.
func ParseName(full string) (ServerKey, error) {
	m := namePattern.FindStringSubmatch(full)
	if m == nil || len(full) < 3 || len(full) > 200 {
		return ServerKey{}, fmt.Errorf("server name %q is not <namespace>/<name>", full)
	}
	return ServerKey{Namespace: m[1], Name: m[2]}, nil
}

// ValidKey reports whether k could name a server, so that reads of impossible names answer without a
// query.
func ValidKey(k ServerKey) bool {
	_, err := ParseName(k.String())
	return err == nil
}

type wireServer struct {
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	WebsiteURL  string          `json:"websiteUrl"`
	Repository  *wireRepository `json:"repository"`
	Packages    []wirePackage   `json:"packages"`
	Remotes     []wireTransport `json:"remotes"`
}

type wireRepository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id"`
	Subfolder string `json:"subfolder"`
}

type wirePackage struct {
	RegistryType         string          `json:"registryType"`
	RegistryBaseURL      string          `json:"registryBaseUrl"`
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version"`
	FileSHA256           string          `json:"fileSha256"`
	RuntimeHint          string          `json:"runtimeHint"`
	Transport            *wireTransport  `json:"transport"`
	RuntimeArguments     json.RawMessage `json:"runtimeArguments"`
	PackageArguments     json.RawMessage `json:"packageArguments"`
	EnvironmentVariables []wireInput     `json:"environmentVariables"`
}

type wireTransport struct {
	Type    string      `json:"type"`
	URL     string      `json:"url"`
	Headers []wireInput `json:"headers"`
}

type wireInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
	Format      string `json:"format"`
	Default     string `json:"default"`
	Value       string `json:"value"`
}

// readFields are the top-level members the rules compare field by field; every other member is
// compared as a whole (Server.Other).
var readFields = map[string]bool{
	"name": true, "version": true, "title": true, "description": true, "websiteUrl": true,
	"repository": true, "packages": true, "remotes": true,
}

// maxVersionLen is the official schema's limit on server.json "version".
const maxVersionLen = 255

// DecodeServer reads a server.json document and checks what the sync relies on: an object with a valid
// name and a version, typed members, packages with a registry type and identifier, remotes with a type
// and URL. A document that fails is an invalid listing item.
func DecodeServer(raw []byte) (Server, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers as written, so that the canonical form and its hash are stable
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return Server{}, errors.New("server is not a JSON object")
	}
	var w wireServer
	if err := json.Unmarshal(raw, &w); err != nil {
		return Server{}, fmt.Errorf("server.json: %w", err)
	}
	key, err := ParseName(w.Name)
	if err != nil {
		return Server{}, err
	}
	if w.Version == "" || len(w.Version) > maxVersionLen {
		return Server{}, errors.New("server.json: version missing or longer than 255 characters")
	}
	canonical, err := json.Marshal(doc) // encoding/json sorts map keys: one form per content
	if err != nil {
		return Server{}, err
	}
	s := Server{
		Key: key, Version: w.Version, Title: w.Title, Description: w.Description, WebsiteURL: w.WebsiteURL,
		JSON: canonical, Other: map[string]string{},
	}
	if r := w.Repository; r != nil {
		s.Repository = &Repository{URL: r.URL, Source: r.Source, ID: r.ID, Subfolder: r.Subfolder}
	}
	for i, p := range w.Packages {
		if p.RegistryType == "" || p.Identifier == "" {
			return Server{}, fmt.Errorf("server.json: packages[%d] lacks registryType or identifier", i)
		}
		pkg := Package{
			RegistryType: p.RegistryType, RegistryBaseURL: p.RegistryBaseURL, Identifier: p.Identifier,
			Version: p.Version, FileSHA256: strings.ToLower(p.FileSHA256), RuntimeHint: p.RuntimeHint,
			RuntimeArguments: canonicalJSON(p.RuntimeArguments), PackageArguments: canonicalJSON(p.PackageArguments),
			EnvironmentVariables: inputs(p.EnvironmentVariables),
		}
		if p.Transport != nil {
			pkg.Transport = Transport{Type: p.Transport.Type, URL: p.Transport.URL, Headers: inputs(p.Transport.Headers)}
		}
		s.Packages = append(s.Packages, pkg)
	}
	for i, r := range w.Remotes {
		if r.Type == "" || r.URL == "" {
			return Server{}, fmt.Errorf("server.json: remotes[%d] lacks type or url", i)
		}
		s.Remotes = append(s.Remotes, Transport{Type: r.Type, URL: r.URL, Headers: inputs(r.Headers)})
	}
	for k, v := range doc {
		if !readFields[k] {
			b, _ := json.Marshal(v) // decoded from JSON, so it encodes
			s.Other[k] = string(b)
		}
	}
	return s, nil
}

func inputs(in []wireInput) []Input {
	out := make([]Input, 0, len(in))
	for _, i := range in {
		out = append(out, Input(i))
	}
	return out
}

// canonicalJSON returns raw in canonical form, "" for an absent or null member.
func canonicalJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ContentHash is the SHA-256 (hex) of a snapshot's content: the canonical server.json and the status.
// Registry bookkeeping (isLatest, timestamps) is left out, so that a version marked "not latest" when
// its successor is published is not a new snapshot.
func ContentHash(s Server, status string) string {
	h := sha256.New()
	h.Write(s.JSON)
	h.Write([]byte{'\n'}) // canonical JSON holds no raw newline, so the split is unambiguous
	h.Write([]byte(status))
	return hex.EncodeToString(h.Sum(nil))
}

// ValidStatus reports whether s is a registry lifecycle status.
func ValidStatus(s string) bool {
	return s == LifecycleActive || s == LifecycleDeprecated || s == LifecycleDeleted
}
