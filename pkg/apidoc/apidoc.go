// Package apidoc builds the OpenAPI 2.0 document a service serves at GET /openapi.json and checks it
// against the routes the service really answers.
//
// The gateway routes are described by the documents protoc-gen-openapiv2 generates from the protos
// (one per .proto, embedded by proto/openapi); Build merges those a service names, adds the plain
// net/http routes no proto describes, and lets the service add what is its own (security, extensions)
// operation by operation:
//
//	doc, err := apidoc.Build(apidoc.Spec{
//		Title: "Payer-policy ingestion service", Version: "1.0.0",
//		Files: openapi.Files, Sources: []string{"ingestion/v1/*.swagger.json"},
//		Plain: []apidoc.Route{{Method: "GET", Path: "/healthz", OperationID: "Operations_Healthz", ...}},
//		Extend: func(op map[string]any, o apidoc.Operation) { ... },
//	})
//	p.Server.Handle("GET /openapi.json", apidoc.Handler(doc))
//
// and a test of the service keeps the two honest both ways:
//
//	apidoc.CheckRoutes(t, doc, p.Server.Routes())
package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Spec is what a service says about its document; Build does the rest.
type Spec struct {
	// Title, Version and Description make the document's info object. Version is the release of the
	// interface, not of the binary.
	Title, Version, Description string
	// Files holds the generated documents (openapi.Files), by path ("ingestion/v1/sources.swagger.json").
	Files fs.FS
	// Sources are the fs.Glob patterns in Files of the documents to merge, in order; the directory of a
	// file is its proto package ("ingestion/v1" is ingestion.v1).
	Sources []string
	// PublicURL, when set, gives the document's host, scheme and base path.
	PublicURL string
	// SecurityDefinitions are the document's securityDefinitions; Security is its default requirement,
	// which an operation's own "security" overrides.
	SecurityDefinitions map[string]any
	Security            []any
	// Definitions are added to the generated ones. "Error", the schema of every error response Route and
	// AddResponse write, is the {"detail": ...} body every service answers errors with, unless given here.
	Definitions map[string]any
	// Extensions are top-level members of the document; every key must begin with "x-".
	Extensions map[string]any
	// Plain documents the routes served by plain handlers, which no proto describes.
	Plain []Route
	// Extend, when set, is called once for every operation, generated or plain, after Build has
	// written it: the place to set its security, its error responses and the service's extensions.
	Extend func(op map[string]any, o Operation)
}

// Route documents one plain route: a handler given to serve.Server.Handle rather than a gateway rule.
type Route struct {
	// Method is upper-case ("GET"); Path is written as net/http writes it, each {name} segment
	// becoming a string path parameter.
	Method, Path string
	OperationID  string
	Tag          string
	Summary      string
	Description  string
	// Produces is the content type of a success, application/json when empty; Consumes is the
	// request body's, empty when the route takes no body.
	Produces, Consumes string
	// Responses maps each documented status ("200", "404") to what it means; a status of 400 or more
	// refers to the Error definition.
	Responses map[string]string
	// Extensions are members set on the operation as they are ("x-access"), before Extend sees it.
	Extensions map[string]any
}

// Operation says which route Extend is looking at.
type Operation struct {
	// Method is upper-case; Path is the documented path.
	Method, Path string
	// GRPCMethod is the gRPC method behind a generated operation ("/ingestion.v1.SourceService/ListSources"),
	// named by the file's proto package and the Service_Method operation id; empty for a plain route.
	GRPCMethod string
	// Plain is the plain route documented; nil for a generated operation.
	Plain *Route
}

// defaultError is the Error definition of a Spec that gives none. detail has no type: Swagger 2.0
// cannot say "a string or an array", and a validation failure (422) lists its violations there.
func defaultError() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": `Every error body: {"detail": ...}.`,
		"properties": map[string]any{
			"detail": map[string]any{"description": "What went wrong: a message, or for a validation failure (422) the list of violations"},
		},
		"required": []any{"detail"},
	}
}

// Build returns the document, indented JSON. It refuses, rather than silently overwrite, a route two
// sources define, a route both generated and plain, and a definition defined differently twice (the
// generators repeat shared ones such as rpcStatus identically in every file, and those merge).
func Build(s Spec) ([]byte, error) {
	b := builder{
		paths:       map[string]any{},
		definitions: map[string]any{},
		tags:        []any{},
		extend:      s.Extend,
	}
	for _, pattern := range s.Sources {
		names, err := fs.Glob(s.Files, pattern)
		if err != nil {
			return nil, fmt.Errorf("apidoc: source %q: %w", pattern, err)
		}
		for _, name := range names {
			if err := b.merge(s.Files, name); err != nil {
				return nil, err
			}
		}
	}
	for i := range s.Plain {
		if err := b.addPlain(&s.Plain[i]); err != nil {
			return nil, err
		}
	}
	if _, ok := s.Definitions["Error"]; !ok {
		if err := b.define("Error", defaultError(), "the default Error"); err != nil {
			return nil, err
		}
	}
	for name, def := range s.Definitions {
		if err := b.define(name, def, "Spec.Definitions"); err != nil {
			return nil, err
		}
	}

	doc := map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": s.Title, "version": s.Version, "description": s.Description},
		"basePath":    "/",
		"consumes":    []any{"application/json"},
		"produces":    []any{"application/json"},
		"paths":       b.paths,
		"definitions": b.definitions,
		"tags":        b.tags,
	}
	if s.SecurityDefinitions != nil {
		doc["securityDefinitions"] = s.SecurityDefinitions
	}
	if s.Security != nil {
		doc["security"] = s.Security
	}
	if s.PublicURL != "" {
		u, err := url.Parse(s.PublicURL)
		if err != nil || u.Host == "" || u.Scheme == "" {
			return nil, fmt.Errorf("apidoc: public URL %q is not an absolute URL", s.PublicURL)
		}
		doc["host"] = u.Host
		doc["schemes"] = []any{u.Scheme}
		if p := strings.TrimRight(u.Path, "/"); p != "" {
			doc["basePath"] = p
		}
	}
	for k, v := range s.Extensions {
		if !strings.HasPrefix(k, "x-") {
			return nil, fmt.Errorf("apidoc: extension %q does not begin with x-", k)
		}
		doc[k] = v
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // descriptions quote bodies such as {"detail": "<...>"}
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("apidoc: %w", err)
	}
	return buf.Bytes(), nil
}

// Handler serves doc, built once at start by Build.
func Handler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
}

// AddResponse documents an error response of op with the Error schema, unless op documents that status
// already: the generated or written answer is the more specific one.
func AddResponse(op map[string]any, status, description string) {
	responses, _ := op["responses"].(map[string]any)
	if responses == nil {
		responses = map[string]any{}
		op["responses"] = responses
	}
	if _, ok := responses[status]; !ok {
		responses[status] = map[string]any{"description": description, "schema": errorRef()}
	}
}

func errorRef() map[string]any { return map[string]any{"$ref": "#/definitions/Error"} }

type builder struct {
	paths       map[string]any
	definitions map[string]any
	tags        []any
	extend      func(map[string]any, Operation)
}

// merge adds one generated document's paths, definitions and tags.
func (b *builder) merge(files fs.FS, name string) error {
	raw, err := fs.ReadFile(files, name)
	if err != nil {
		return fmt.Errorf("apidoc: %w", err)
	}
	var part struct {
		Paths       map[string]map[string]map[string]any `json:"paths"`
		Definitions map[string]any                       `json:"definitions"`
		Tags        []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(raw, &part); err != nil {
		return fmt.Errorf("apidoc: %s: %w", name, err)
	}
	pkg := strings.ReplaceAll(path.Dir(name), "/", ".")
	for p, ops := range part.Paths {
		for method, op := range ops {
			if b.has(p, method) {
				return fmt.Errorf("apidoc: %s %s is defined twice (%s)", strings.ToUpper(method), p, name)
			}
			o := Operation{Method: strings.ToUpper(method), Path: p}
			id, _ := op["operationId"].(string)
			if service, rpc, ok := strings.Cut(id, "_"); ok {
				o.GRPCMethod = "/" + pkg + "." + service + "/" + rpc
			}
			b.add(op, o)
		}
	}
	for k, v := range part.Definitions {
		if err := b.define(k, v, name); err != nil {
			return err
		}
	}
	for _, t := range part.Tags {
		b.addTag(t.Name, t.Description)
	}
	return nil
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func (b *builder) addPlain(r *Route) error {
	if b.has(r.Path, r.Method) {
		return fmt.Errorf("apidoc: %s %s is both a gateway route and a plain route, or a plain route twice", r.Method, r.Path)
	}
	op := map[string]any{"operationId": r.OperationID, "summary": r.Summary}
	if r.Tag != "" {
		op["tags"] = []any{r.Tag}
		b.addTag(r.Tag, "")
	}
	if r.Description != "" {
		op["description"] = r.Description
	}
	produces := r.Produces
	if produces == "" {
		produces = "application/json"
	}
	op["produces"] = []any{produces}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
		params = append(params, map[string]any{"name": strings.TrimSuffix(m[1], "..."), "in": "path", "required": true, "type": "string"})
	}
	if r.Consumes != "" {
		op["consumes"] = []any{r.Consumes}
		params = append(params, map[string]any{"name": "body", "in": "body", "required": true, "schema": map[string]any{"type": "object"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	responses := map[string]any{}
	for code, desc := range r.Responses {
		resp := map[string]any{"description": desc}
		if code >= "400" {
			resp["schema"] = errorRef()
		}
		responses[code] = resp
	}
	op["responses"] = responses
	for k, v := range r.Extensions {
		op[k] = v
	}
	b.add(op, Operation{Method: r.Method, Path: r.Path, Plain: r})
	return nil
}

func (b *builder) has(p, method string) bool {
	item, _ := b.paths[p].(map[string]any)
	_, ok := item[strings.ToLower(method)]
	return ok
}

func (b *builder) add(op map[string]any, o Operation) {
	item, _ := b.paths[o.Path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		b.paths[o.Path] = item
	}
	if b.extend != nil {
		b.extend(op, o)
	}
	item[strings.ToLower(o.Method)] = op
}

func (b *builder) define(name string, def any, from string) error {
	if old, ok := b.definitions[name]; ok && !reflect.DeepEqual(old, def) {
		return fmt.Errorf("apidoc: definition %s differs between files (%s)", name, from)
	}
	b.definitions[name] = def
	return nil
}

func (b *builder) addTag(name, description string) {
	if name == "" || slices.ContainsFunc(b.tags, func(t any) bool { return t.(map[string]any)["name"] == name }) {
		return
	}
	t := map[string]any{"name": name}
	if description != "" {
		t["description"] = description
	}
	b.tags = append(b.tags, t)
}

// ProbeRoutes documents the routes pkg/serve gives every service, service naming it in the liveness
// answer: the probes and GET /openapi.json itself.
func ProbeRoutes(service string) []Route {
	return []Route{
		{
			Method: "GET", Path: "/healthz", OperationID: "Operations_Healthz", Tag: "Operations",
			Summary:   "Liveness",
			Responses: map[string]string{"200": `{"status":"ok","service":"` + service + `"}`},
		},
		{
			Method: "GET", Path: "/readyz", OperationID: "Operations_Readyz", Tag: "Operations",
			Summary: "Readiness",
			Responses: map[string]string{
				"200": `ready: {"status":"ready","checks":{"database":"ok"}}`,
				"503": `the database is unreachable: {"status":"not_ready","checks":{"database":"unavailable"}}`,
			},
		},
		{
			Method: "GET", Path: "/openapi.json", OperationID: "Operations_OpenAPI", Tag: "Operations",
			Summary:   "This document",
			Responses: map[string]string{"200": "the OpenAPI 2.0 document of the service"},
		},
	}
}
