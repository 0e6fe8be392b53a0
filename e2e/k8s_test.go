package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"
)

// k8sObject is the part of a Deployment or Job manifest the check reads.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Args  []string `yaml:"args"`
					Ports []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
					Env []struct {
						Name string `yaml:"name"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func TestKubernetesManifestsMatchServiceConfig(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	for _, d := range deployed {
		t.Run(d.name, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(root, "deploy", "k8s", d.name, "*.yaml"))
			kinds := map[string]bool{}
			for _, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				dec := yaml.NewDecoder(bytes.NewReader(raw))
				for {
					var obj k8sObject
					if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					kinds[obj.Kind] = true
					for _, c := range obj.Spec.Template.Spec.Containers {
						for _, e := range c.Env {
							if !slices.Contains(d.vars, e.Name) {
								t.Errorf("%s %s sets %s, which the service does not read", obj.Kind, obj.Metadata.Name, e.Name)
							}
						}
						if obj.Kind == "Job" && !slices.Contains(c.Args, "migrate") {
							t.Errorf("Job %s does not run the migrate subcommand: args %v", obj.Metadata.Name, c.Args)
						}
						if obj.Kind == "Deployment" {
							ports := map[string]int{}
							for _, p := range c.Ports {
								ports[p.Name] = p.ContainerPort
							}
							if got := ports["http"]; strconv.Itoa(got) != d.http {
								t.Errorf("Deployment http port: got %d, want %s", got, d.http)
							}
							if got := ports["grpc"]; strconv.Itoa(got) != d.grpc {
								t.Errorf("Deployment grpc port: got %d, want %s", got, d.grpc)
							}
						}
					}
				}
			}
			for _, k := range []string{"Deployment", "Service", "Job"} {
				if !kinds[k] {
					t.Errorf("deploy/k8s/%s has no %s", d.name, k)
				}
			}
		})
	}
}
