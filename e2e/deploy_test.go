package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	ingestion "github.com/trustlayer/trustlayer/services/ingestion/app"
	scoring "github.com/trustlayer/trustlayer/services/scoring/app"
	verification "github.com/trustlayer/trustlayer/services/verification/app"
)

// deployed is what each service's deployment must agree with: its name, variables and ports.
var deployed = []struct {
	name   string
	prefix string
	vars   []string
	http   string
	grpc   string
}{
	{verification.Name, verification.EnvPrefix, verification.ConfigVars(), "8081", "9091"},
	{scoring.Name, scoring.EnvPrefix, scoring.ConfigVars(), "8082", "9092"},
	{ingestion.Name, ingestion.EnvPrefix, ingestion.ConfigVars(), "8083", "9093"},
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Build       *composeBuild `yaml:"build"`
	Ports       []string      `yaml:"ports"`
	Environment composeEnv    `yaml:"environment"`
	DependsOn   yaml.Node     `yaml:"depends_on"`
	Command     yaml.Node     `yaml:"command"`
}

type composeBuild struct {
	Context    string            `yaml:"context"`
	Dockerfile string            `yaml:"dockerfile"`
	Args       map[string]string `yaml:"args"`
}

// composeEnv accepts both forms compose allows: a map, or a list of NAME=value.
type composeEnv map[string]string

func (e *composeEnv) UnmarshalYAML(n *yaml.Node) error {
	*e = composeEnv{}
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
		return nil
	}
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		(*e)[k] = v
	}
	return nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestComposeMatchesServiceConfig(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, infra := range []string{"postgres", "nats"} {
		if _, ok := f.Services[infra]; !ok {
			t.Errorf("docker-compose.yml has no %s service", infra)
		}
	}
	if nats, ok := f.Services["nats"]; ok && !strings.Contains(nodeText(nats.Command), "-js") {
		t.Errorf("nats runs without JetStream (-js): command %q", nodeText(nats.Command))
	}
	known := map[string]bool{"postgres": true, "nats": true}
	for _, d := range deployed {
		known[d.name] = true
		t.Run(d.name, func(t *testing.T) {
			s, ok := f.Services[d.name]
			if !ok {
				t.Fatalf("docker-compose.yml has no %s service", d.name)
			}
			if s.Build == nil {
				t.Fatal("service is not built from the repository")
			}
			if _, err := os.Stat(filepath.Join(root, s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("Dockerfile %s: %v", s.Build.Dockerfile, err)
			}
			if s.Build.Args["SERVICE"] != d.name {
				t.Errorf("build arg SERVICE: got %q, want %q", s.Build.Args["SERVICE"], d.name)
			}
			for name := range s.Environment {
				if !slices.Contains(d.vars, name) {
					t.Errorf("environment names %s, which the service does not read (it reads %v)", name, d.vars)
				}
			}
			for _, v := range []string{"DATABASE_URL", "ADMIN_TOKEN"} {
				if _, ok := s.Environment[d.prefix+v]; !ok {
					t.Errorf("required %s%s is not set", d.prefix, v)
				}
			}
			checkAddr := func(v, port string) {
				if addr := s.Environment[d.prefix+v]; !strings.HasSuffix(addr, ":"+port) {
					t.Errorf("%s%s: got %q, want the default port %s", d.prefix, v, addr, port)
				}
				if !slices.Contains(s.Ports, port+":"+port) {
					t.Errorf("ports %v do not publish %s", s.Ports, port)
				}
			}
			checkAddr("HTTP_ADDR", d.http)
			checkAddr("GRPC_ADDR", d.grpc)
			if url := s.Environment[d.prefix+"DATABASE_URL"]; !strings.Contains(url, "@postgres:5432/"+d.name) {
				t.Errorf("%sDATABASE_URL %q is not the service's own database on the postgres service", d.prefix, url)
			}
			if !strings.Contains(s.Environment["NATS_URL"], "nats:4222") {
				t.Errorf("NATS_URL %q is not the nats service", s.Environment["NATS_URL"])
			}
			deps := nodeText(s.DependsOn)
			for _, dep := range []string{"postgres", "nats"} {
				if !strings.Contains(deps, dep) {
					t.Errorf("depends_on %q lacks %s", deps, dep)
				}
			}
		})
	}
	for name := range f.Services {
		if !known[name] {
			t.Errorf("docker-compose.yml has a service %q that no test knows", name)
		}
	}
}

// nodeText flattens a YAML node (a string, list or map) into its scalar words.
func nodeText(n yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var words []string
	for _, c := range n.Content {
		words = append(words, nodeText(*c))
	}
	return strings.Join(words, " ")
}
