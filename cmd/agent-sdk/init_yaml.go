package main

// agentYAML is the agent.yaml init writes: every key agentconfig reads,
// each with its default, commented out (every key is optional). A line
// that is a setting starts with a bare # before its YAML, so deleting
// the # alone gives the setting at its indentation; prose starts "# ".
// init_test.go checks that the file parses, that uncommenting every
// setting parses too, that every key agentconfig knows is in it, and that
// the defaults shown are the host's.
const agentYAML = `# The agent's configuration, read at every build and start. Every key is
# optional; each is shown with its default, commented out: delete the #
# before a setting (and its section's line) to change it. README.md of the
# SDK describes each part: Sessions and model turns, Cost and budgets,
# Long sessions, Channels, Slack and GitHub, OpenTelemetry.

# The model of model turns. Without one, direct calls (agent-sdk call, POST
# /<slug>/v1/tools/<name>) work and turns fail saying how to configure one.
# The key comes from the provider's variable: ANTHROPIC_API_KEY,
# OPENAI_API_KEY or GEMINI_API_KEY. Only this provider is built in.
#model:
#  provider: anthropic        # anthropic, openai (also Ollama, vLLM, llama.cpp) or gemini; no default
#  name: claude-sonnet-4-5    # no default
#  baseURL: https://api.anthropic.com   # default: the provider's, or ANTHROPIC_BASE_URL / OPENAI_BASE_URL / GOOGLE_GEMINI_BASE_URL
#  apiKey: …                  # default: the provider's variable; better left there than written here
#  maxTokens: 4096            # most tokens of an answer
#  thinking: {budgetTokens: 8000}  # Anthropic extended thinking (1024 or more), Gemini's budget; default: off
#  reasoningEffort: medium    # OpenAI reasoning models: minimal, low, medium or high; default: the model's
#  contextWindow: 200000      # tokens; default: the shipped table's (model.DefaultWindows)

# The system prompt of every turn; default: none.
#system: You review pull requests. Inspect them before judging.

# Limits of one model turn.
#maxSteps: 16                # model calls per turn
#toolConcurrency: 4          # tool calls run at once within a turn
#modelTimeout: 5m            # per model call, its retries included
#modelRetries: 3             # retries of a rate-limited or overloaded call (0 to 10)
#maxResumes: 2               # resumptions of a turn whose host died (0 to 10; 0: never)

# Where a new session's turns run: local (in the host) or cloud (on an
# agent-sdk runner).
#mode: local

# What runs a new session's turns: native (the host's model loop), or a
# coding-agent harness over ACP (claude-code, codex, gemini, or one named
# below), with its own file, edit and shell tools, plus this agent's tools
# and approvals. See README, Harness turns.
#runtime: native
#harnesses:
#  claude-code:              # npm install -g @zed-industries/claude-agent-acp
#    model: claude-sonnet-4-6
#    env: {}                 # added to its environment
#    permissions:            # answered without a person; the rest is asked
#      allow: [read, search]
#      ask: [edit, execute]
#      deny: ["execute:rm -rf*"]
#      always: ["execute:go test*"]  # once allowed, answered "allow always": not asked again in its session
#    hangTimeout: 30m        # silent this long (waits for a person or this agent's tools aside): the turn fails
#  my-agent:                 # any other ACP agent
#    command: /usr/local/bin/my-agent
#    args: [--acp]

# Keeping turns within the model's context window: past the threshold, old
# tool results are cleared, then the turns before the last keepTurns are
# summarised.
#compaction:
#  enabled: true             # false: results never cleared, turns never summarised
#  threshold: 0.8            # share of the window (above 0, at most 1)
#  keepTurns: 2              # the last turns kept verbatim (1 or more)
#  clearBytes: 2048          # old results larger than this are cleared first (0: all; -1: none)
#  model: claude-haiku-4-5   # writes the summaries; default: model.name
#  prompt: Summarise the conversation so far.  # default: the SDK's summariser prompt
#  summaryTokens: 2048       # most tokens of a summary

# What model turns may spend, in tokens (every kind) or dollars; a limit
# of 0, or none, is no limit.
#limits:
#  turn: {tokens: 0, usd: 0}
#  session: {tokens: 0, usd: 0}
#  principalDaily: {tokens: 0, usd: 0}   # per principal per UTC day
#  onExceed: fail            # fail the turn, or approve: park a raise for a person

# Prices in dollars per million tokens, over the shipped table
# (model.DefaultPrices), by model name; cacheRead and cacheWrite default to
# input.
#pricing:
#  my-finetune: {input: 3, output: 15, cacheRead: 0.30, cacheWrite: 3.75}

# MCP servers the tools reach through call.Host.MCP, by name: a command
# over stdio, or a streamable-HTTP URL. Default: none.
#mcp:
#  github: {command: github-mcp-server, args: [stdio], env: {GITHUB_TOKEN: …}}
#  docs: {url: https://docs.example.com/mcp, headers: {X-Team: review}, bearerToken: …}

# OpenTelemetry. otlp builds the OTLP/HTTP exporter in (used when the
# OTEL_EXPORTER_OTLP_* variables are set); captureContent records prompts,
# answers, inputs and results on the spans.
#telemetry:
#  otlp: false
#  captureContent: false

# The built-in Slack channel and platform.Slack(call.Host), on when the
# section is given (even empty). Secrets come from the variables named here.
#slack:
#  botTokenEnv: SLACK_BOT_TOKEN
#  signingSecretEnv: SLACK_SIGNING_SECRET
#  apiURL: https://slack.com/api/
#  approvals:
#    channel: C0123456789     # also post a card here for every parked call; default: none
#    allow: [U012AB3CD]       # who may decide (users or user groups); default: anyone

# platform.GitHub(call.Host): a token, or a GitHub App installation, on
# when the section is given.
#github:
#  tokenEnv: GITHUB_TOKEN     # when app: is not given
#  app: {id: 123456, installationId: 7890123, privateKeyEnv: GITHUB_APP_PRIVATE_KEY}
#  baseURL: https://github.example.com/api/v3/   # GitHub Enterprise Server; default: github.com

# Roles for API keys (agent-sdk keys create NAME --roles …), over the
# shipped admin, operator, reader, approver and auditor: named sets of the
# permissions read, message, call, approve, read:all and admin.
#auth:
#  roles:
#    deployer: [read, message, call]
# Bearer JWTs from an OpenID Connect issuer, besides the token and keys:
# checked against its discovery document and keys (RS256 or ES256; exp,
# nbf, iss, aud), acting as oidc:<sub> with the roles of rolesClaim. With
# serve --public-url, the MCP endpoint is an OAuth resource server too
# (tokens for <public-url>/<slug>/mcp with the scope tools:call).
#  oidc:
#    issuer: https://login.example.com   # exactly as the tokens' iss
#    audience: agent-api                 # the aud the API's tokens carry
#    rolesClaim: roles                   # a string or an array; realm_access.roles for a nested one
#    clientId: agent-playground          # the playground's sign-in with the issuer (PKCE); default: none
# Slack users as principals, for tools' approver policies (roles, four-eyes,
# quorum): a user decides as this principal, with these roles; unmapped,
# as slack:<id> with none.
#  slack:
#    U0ALICE01: {principal: "key:3xkq7ztmhb2ma", roles: [deployer]}
`
