package serve

import (
	"slices"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Route is one HTTP route the server answers: a gateway rule of a registered gRPC method, or a plain
// handler given to Handle. A service's API description can be checked against Routes, so that a route
// nobody documented fails a test instead of going unnoticed.
type Route struct {
	// Method is the HTTP method; empty for a plain handler registered without one (any method).
	Method string
	// Path is the gateway's path template ("/v1/workflows/{workflow}/schema") or the net/http
	// pattern's path ("/v1/models/reliability/{name}", "/static/" for a subtree).
	Path string
	// FullMethod is the gRPC method behind a gateway route ("/scoring.v1.ScoringService/Score");
	// empty for a plain handler.
	FullMethod string
}

// Routes lists every route the server answers, gateway rules first (by registration order), then
// plain handlers in the order they were added. The catch-all that hands requests to the gateway is
// not a route of its own.
func (s *Server) Routes() []Route {
	s.routesMu.Lock()
	defer s.routesMu.Unlock()
	var out []Route
	for _, name := range s.gatewayServices {
		out = append(out, httpRules(name)...)
	}
	return append(out, s.plainRoutes...)
}

// addPlainRoute records a plain handler's route (parsePattern's).
func (s *Server) addPlainRoute(r Route) {
	s.routesMu.Lock()
	defer s.routesMu.Unlock()
	s.plainRoutes = append(s.plainRoutes, r)
}

func (s *Server) addGatewayService(name string) {
	s.routesMu.Lock()
	defer s.routesMu.Unlock()
	if !slices.Contains(s.gatewayServices, name) {
		s.gatewayServices = append(s.gatewayServices, name)
	}
	if s.gatewayMethods == nil {
		s.gatewayMethods = map[string]string{}
	}
	for _, r := range httpRules(name) {
		s.gatewayMethods[r.Method+" "+r.Path] = r.FullMethod
	}
}

// parsePattern splits a net/http.ServeMux pattern ("[METHOD ][HOST]/PATH"); a host, when present, is
// dropped.
func parsePattern(pattern string) Route {
	var r Route
	if method, rest, ok := strings.Cut(pattern, " "); ok {
		r.Method, pattern = method, strings.TrimLeft(rest, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:]
	}
	r.Path = pattern
	return r
}

// httpRules reads the google.api.http rules of a service from the generated descriptors: the same
// annotations the generated gateway code was built from, so the list is what the gateway serves.
func httpRules(service string) []Route {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	var out []Route
	methods := sd.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule == nil {
			continue
		}
		full := "/" + service + "/" + string(m.Name())
		for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
			if method, path := ruleMethodPath(r); path != "" {
				out = append(out, Route{Method: method, Path: path, FullMethod: full})
			}
		}
	}
	return out
}

func ruleMethodPath(r *annotations.HttpRule) (string, string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return "GET", p.Get
	case *annotations.HttpRule_Put:
		return "PUT", p.Put
	case *annotations.HttpRule_Post:
		return "POST", p.Post
	case *annotations.HttpRule_Delete:
		return "DELETE", p.Delete
	case *annotations.HttpRule_Patch:
		return "PATCH", p.Patch
	case *annotations.HttpRule_Custom:
		return p.Custom.GetKind(), p.Custom.GetPath()
	}
	return "", ""
}
