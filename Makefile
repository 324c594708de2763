# Convergo Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

GO            ?= go
BIN           := $(CURDIR)/bin
# Pinned tools, installed into ./bin with `go install`.
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN         := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)

# Control-plane assets (built from the Go module proxy by testing/assets, cached across runs).
ASSETS        := $(GO) run ./testing/assets/cmd/convergo-assets
TEST_TIMEOUT  ?= 40m
TEST_FLAGS    ?=
# What tests keep (t.ArtifactDir, such as the Welcome page's screenshots): $(TEST_OUTPUT)/_artifacts.
TEST_OUTPUT   ?= $(CURDIR)/test-output
ARGS          ?=
EXAMPLES      := memcached welcome database
# The examples whose API types and manifests are generated: tenancy runs in a hub with member clusters
# and has no deploy target.
API_EXAMPLES  := $(EXAMPLES) tenancy

.PHONY: help
help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: tools
tools: $(CONTROLLER_GEN) ## Install the pinned tools into ./bin.

# need-command: nothing when the command $(1) is on PATH; else, as root with apt-get, installs Debian's
# package $(2); else stops with the command to run. $(3) says what needs it. Installs from makes run side
# by side (make test twice on a fresh machine) queue on one lock and each looks again once it holds it,
# so the second finds what the first installed instead of failing on the package manager's lock.
define need-command
@command -v $(1) >/dev/null 2>&1 || { \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's $(2) ($(3))"; \
	  flock /var/lock/convergo-apt.lock sh -c 'command -v $(1) >/dev/null 2>&1 || { apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $(2); }' && \
	  command -v $(1) >/dev/null; \
	else \
	  echo "make $@: $(1) not found ($(3)); install it with: sudo apt-get install -y $(2)$(4)" >&2; exit 1; \
	fi; }
endef

.PHONY: chromium
chromium: ## Install Debian's chromium if missing (TestDemo opens the Welcome page in it headless).
	$(call need-command,chromium,chromium,TestDemo opens the Welcome page in headless Chromium,$(if $(filter test,$(MAKECMDGOALS)), (or leave it out: make test TEST_FLAGS='-skip TestDemo/Chromium')))

.PHONY: postgresql
postgresql: ## Install Debian's postgresql if its server binaries are missing (the Database example's tests start a private server).
	$(call need-command,"$$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -n 1)",postgresql,the Database example's tests start a private PostgreSQL)

.PHONY: cgo
cgo: ## Install Debian's gcc if Go's C compiler is missing (the race detector needs cgo).
	$(call need-command,"$$($(GO) env CC)",gcc,go test -race needs cgo and so a C compiler)

.PHONY: assets
assets: ## Build or locate every test binary (kube-apiserver, etcd, controller-manager, scheduler, kwok, kubectl, jaeger).
	$(ASSETS) -components all

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the examples' API types.
	@for ex in $(API_EXAMPLES); do \
	  if [ -d examples/$$ex/api ]; then $(CONTROLLER_GEN) object paths=./examples/$$ex/api/...; fi; \
	done

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and (where config/webhook exists) webhook configurations for the examples.
	@for ex in $(API_EXAMPLES); do \
	  if [ -d examples/$$ex/api ]; then \
	    $(CONTROLLER_GEN) crd paths=./examples/$$ex/api/... output:crd:artifacts:config=examples/$$ex/config/crd/bases; \
	    $(CONTROLLER_GEN) rbac:roleName=$$ex-manager-role paths=./examples/$$ex/... output:rbac:artifacts:config=examples/$$ex/config/rbac; \
	    if [ -d examples/$$ex/config/webhook ]; then \
	      $(CONTROLLER_GEN) webhook paths=./examples/$$ex/... output:webhook:artifacts:config=examples/$$ex/config/webhook; \
	    fi; \
	  fi; \
	done

# The history of the work belongs in git, not in what the docs and the code say: no "session 35",
# "sessions 33-35", "session35", line-ending "session" (number on the next line), "in this session",
# "the previous session". Not the Memcached sample named sessions ("Memcached/sessions", "sessions 3 -> 5
# pods", "sessions  0/3"), nor sessionAffinity.
HISTORY_WORDS := \bsessions? [0-9]+([^0-9 /-]|-[0-9]| [^0-9 -]|$$)|\bsession[0-9]|(^|[[:space:](])session$$|\b(in|this|that|a|an|one|the|each|every|previous|earlier|next|last|later|same|current) session\b|\bsession by session\b
HISTORY_FILES := README.md CHANGELOG.md 'docs/*.md' '*.go'
# Dates of runs: the docs point to bench/results/README.md, which lists the runs kept.
RUN_DATES     := \b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b
RUN_DATE_FILES := README.md 'docs/*.md'

.PHONY: lint
lint: ## gofmt, go vet; no build output or file over 2 MiB tracked; no history ("session 35") or run dates in docs and code.
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$(git ls-files -z | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] || continue; \
	    if [ "$$(head -c 4 "$$f" | od -An -tx1 | tr -d " \n")" = 7f454c46 ] || [ "$$(wc -c < "$$f")" -gt 2097152 ]; then echo "$$f"; fi; done' sh); \
	  if [ -n "$$out" ]; then echo "tracked executables or files over 2 MiB (build outputs? git rm --cached them and add them to .gitignore):"; echo "$$out"; exit 1; fi
	@rc=0; out=$$(git grep -n -I -i -E --untracked '$(HISTORY_WORDS)' -- $(HISTORY_FILES)) || rc=$$?; [ $$rc -le 1 ] || exit $$rc; \
	  if [ -n "$$out" ]; then echo "the history of the work (\"session 35\", \"in this session\") belongs in git; state what holds instead:"; echo "$$out"; exit 1; fi
	@rc=0; out=$$(git grep -n -I -E --untracked '$(RUN_DATES)' -- $(RUN_DATE_FILES)) || rc=$$?; [ $$rc -le 1 ] || exit $$rc; \
	  if [ -n "$$out" ]; then echo "run dates in README.md or docs/ (point to bench/results/README.md instead):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags chaos ./examples/internal/reliability/chaos/

# The library's integration tests carry the build tag "integration": without it, `go test` of a library
# package runs only its unit tests and needs no control plane (make test-unit).
LIBRARY_PKGS  := ./reconcile/... ./status/ ./finalizer/ ./ownership/ ./builders/ ./sharding/ ./cmd/...

# TestDemo's Chromium subtests need chromium, unless TEST_FLAGS leaves them out (-short, or -skip naming TestDemo).
TEST_NEEDS    = $(if $(or $(findstring -short,$(TEST_FLAGS)),$(and $(findstring -skip,$(TEST_FLAGS)),$(findstring TestDemo,$(TEST_FLAGS)))),,chromium)

.PHONY: test
test: $(TEST_NEEDS) postgresql $(CONTROLLER_GEN) assets ## Install what is needed (as root: Debian's chromium) and run every test against a real API server.
	rm -rf $(TEST_OUTPUT)/_artifacts && mkdir -p $(TEST_OUTPUT)
	KUBEBUILDER_ASSETS="$$($(ASSETS) -components all -print dir)" \
	  $(GO) test -tags integration -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(TEST_OUTPUT) $(TEST_FLAGS) ./...

.PHONY: test-unit
test-unit: ## Every package's unit tests (an untagged go test ./...): no control plane built or started.
	env -u KUBEBUILDER_ASSETS $(GO) test $(TEST_FLAGS) ./...

# The race detector over the tests, unit and integration, of the code that runs inside operators: the
# library (Graph's parallel applies, the caches, the records, sharding), the test kit and both examples.
RACE_PKGS     := $(LIBRARY_PKGS) ./testing/... ./examples/welcome/... ./examples/memcached/...

.PHONY: test-race
test-race: cgo $(CONTROLLER_GEN) assets ## The library's, testing/'s and the examples' tests (unit and integration) under the race detector (needs cgo: gcc, installed as root).
	KUBEBUILDER_ASSETS="$$($(ASSETS) -components all -print dir)" \
	  $(GO) test -race -tags integration -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(RACE_PKGS)

.PHONY: test-chaos
test-chaos: $(CONTROLLER_GEN) assets ## Slow fault-injection suites (apiserver kill, etcd pause, manager kill, leader election).
	KUBEBUILDER_ASSETS="$$($(ASSETS) -components all -print dir)" \
	  $(GO) test -tags chaos -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) ./examples/internal/reliability/chaos/

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (never part of make test; seeds run in make test).
	$(GO) test ./reconcile/internal/intent/ -run '^$$' -fuzz '^FuzzIntent$$' -fuzztime $(FUZZTIME)
	$(GO) test ./reconcile/internal/intent/ -run '^$$' -fuzz '^FuzzIntentSubset$$' -fuzztime $(FUZZTIME)
	$(GO) test ./status/ -run '^$$' -fuzz '^FuzzSetConditions$$' -fuzztime $(FUZZTIME)
	$(GO) test ./status/ -run '^$$' -fuzz '^FuzzPatchDelta$$' -fuzztime $(FUZZTIME)

.PHONY: demo
demo: postgresql assets ## Start a local cluster and a private PostgreSQL, run the three example operators and show them converge, their traces in a private Jaeger (ARGS=--keep keeps it; ARGS=--serve-page serves the Welcome page).
	$(GO) run ./examples/demo $(ARGS)

# make deploy / undeploy: EXAMPLE is one of $(EXAMPLES) (or use deploy-<example>, undeploy-<example>).
# The cluster is the one `make demo ARGS=--keep` leaves running unless KUBECONFIG is given on the make
# command line (an exported KUBECONFIG is not used, so that a plain `make deploy` never reaches another
# cluster). IMG replaces the operator's image. On the local cluster the Deployment's pods are kwok's and
# run nothing: the operator runs from the built binary as a local process, not from an image.
EXAMPLE       ?=
IMG           ?=
DEPLOY_KUBECONFIG = $(if $(filter command line,$(origin KUBECONFIG)),$(KUBECONFIG),$(CURDIR)/demo-run/cluster/kubeconfig)
DEPLOY        = $(GO) run ./examples/deploy -kubeconfig '$(DEPLOY_KUBECONFIG)' $(if $(IMG),-image '$(IMG)')

.PHONY: deploy
deploy: ## Deploy EXAMPLE=memcached|welcome (CRDs, RBAC, Deployment; a sample Ready); locally the operator runs from the built binary, not an image.
	@[ -n "$(EXAMPLE)" ] || { echo "make deploy: set EXAMPLE to one of: $(EXAMPLES) (make deploy EXAMPLE=welcome, or make deploy-welcome)" >&2; exit 2; }
	$(DEPLOY) deploy $(EXAMPLE)

.PHONY: undeploy
undeploy: ## Remove EXAMPLE: its samples first (finalizers released by the running operator), the operator, then RBAC, CRDs, namespace.
	@[ -n "$(EXAMPLE)" ] || { echo "make undeploy: set EXAMPLE to one of: $(EXAMPLES) (make undeploy EXAMPLE=welcome, or make undeploy-welcome)" >&2; exit 2; }
	$(DEPLOY) undeploy $(EXAMPLE)

.PHONY: $(addprefix deploy-,$(EXAMPLES)) $(addprefix undeploy-,$(EXAMPLES))
$(addprefix deploy-,$(EXAMPLES)): deploy-%:
	$(DEPLOY) deploy $*
$(addprefix undeploy-,$(EXAMPLES)): undeploy-%:
	$(DEPLOY) undeploy $*

.PHONY: bench
bench: assets ## Benchmarks: Convergo's Welcome against an expert's and the tutorial way, then the micro-benchmarks (never part of make test).
	$(GO) run ./bench/cmd/bench $(ARGS)
	$(MAKE) --no-print-directory bench-micro

.PHONY: bench-sharding
bench-sharding: assets ## Heap of each of 3 sharded Welcome replicas (separate processes) against one unsharded replica (ARGS="-n 1500 -out bench/results").
	$(GO) run ./bench/cmd/shardbench $(ARGS)

.PHONY: bench-micro
bench-micro: assets ## Go micro-benchmarks of Apply's drift check and the condition helpers, allocations reported.
	KUBEBUILDER_ASSETS="$$($(ASSETS) -components all -print dir)" \
	  $(GO) test -run '^$$' -bench . -benchmem ./reconcile/apply/ ./reconcile/internal/intent/ ./status/
