# Everything a developer or CI runs. `make` alone lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

MODULES  := pkg pkg/loadtest proto services/verification services/scoring services/ingestion e2e
PACKAGES := $(foreach m,$(MODULES),./$(m)/...)
SERVICES := verification scoring ingestion
BIN      := bin
BUF      := $(BIN)/buf
STATICCHECK := $(BIN)/staticcheck
# Generated files, removed before each generation so that a deleted .proto leaves no orphan behind.
GENERATED = $(shell find proto -name '*.pb.go' -o -name '*.pb.gw.go' -o -name '*.swagger.json')

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(BUF) $(STATICCHECK) &: tools/go.mod tools/go.sum
	@# Pinned in tools/go.mod, outside the workspace, so their dependencies never touch the services'.
	GOWORK=off go -C tools build -o ../$(BIN)/ github.com/bufbuild/buf/cmd/buf honnef.co/go/tools/cmd/staticcheck

.PHONY: tools
tools: $(BUF) $(STATICCHECK) ## build the pinned developer tools (buf, staticcheck) into ./bin

.PHONY: generate
generate: $(BUF) ## regenerate Go, gateway and OpenAPI code from proto/ (local plugins only)
	rm -f $(GENERATED)
	$(BUF) generate --exclude-path proto/google

.PHONY: check-generated
check-generated: generate ## fail when generated code differs from what is committed
	@if ! git diff --quiet -- proto || [ -n "$$(git ls-files --others --exclude-standard proto)" ]; then \
		echo "generated code is stale: run 'make generate' and commit the result"; \
		git status --short proto; exit 1; fi

.PHONY: fmt
fmt: ## format the Go code
	gofmt -w $(MODULES)

.PHONY: lint
lint: $(BUF) $(STATICCHECK) ## gofmt check, go vet, staticcheck, buf lint, go.mod tidiness
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	go vet $(PACKAGES)
	$(STATICCHECK) $(PACKAGES)
	$(BUF) lint
	@for m in $(MODULES); do (cd $$m && GOWORK=off go mod tidy -diff) || { echo "$$m: go.mod is not tidy: run 'go mod tidy' in $$m"; exit 1; }; done

.PHONY: deps
deps: ## make sure PostgreSQL and NATS (JetStream) run locally, installing them when absent
	deploy/local/deps.sh ensure

.PHONY: conformance
conformance: deps ## the official MCP conformance suite against scoring's /mcp (Node.js 22 and the suite go into ./bin)
	@tools=$$(deploy/local/conformance-tools.sh) && set -- $$tools && \
		go run ./services/scoring/conformance -node "$$1" -suite "$$2"

.PHONY: test
test: deps lint check-generated conformance ## everything CI checks: lint, generated-code drift, MCP conformance, tests against real PostgreSQL and NATS
	go test -race -count=1 -timeout 20m $(PACKAGES)

.PHONY: bench
bench: deps ## benchmarks and load runs (outside CI); figures are ratios against a baseline of the same run
	deploy/local/deps.sh wrk
	go test -run '^$$' -bench . -benchmem -count 5 $(PACKAGES)
	go run ./services/scoring/cmd/scoring-bench
	go run ./services/verification/cmd/verification-bench

.PHONY: build
build: ## build the three service binaries, stamped with version, commit and build time, into ./bin
	@for s in $(SERVICES); do go build -ldflags "$$(deploy/ldflags.sh)" -o $(BIN)/$$s ./services/$$s/cmd/$$s || exit 1; done

.PHONY: run
run: ## run the whole stack locally without Docker (PostgreSQL, NATS, the three services); Ctrl-C stops it
	deploy/local/run.sh

.PHONY: audit-compare
audit-compare: deps ## the audit engine side by side with the official MCP conformance suite (report in stdout)
	@tools=$$(deploy/local/conformance-tools.sh) && set -- $$tools && \
		go run ./services/verification/cmd/audit-compare -node "$$1" -suite "$$2"
