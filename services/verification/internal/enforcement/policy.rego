# Enforcement policy for MCP gateways and clients (Rego v1). The data document data.json of the same
# artifact holds the allowlist of one snapshot at data.mcp_allowlist; this module is the same for
# every snapshot.
#
# Query data.mcp_enforcement.allow with an input of:
#   server      "{namespace}/{name}" (required)
#   version     the server's version (optional: when given, it must be the version compiled)
#   remote_url  the remote's URL (optional: any allowed remote of the server)
#   tool        {name, description_sha256, input_schema_sha256, output_schema_sha256} (optional:
#               the server or remote alone); the hashes are those of internal/audit/surface
#               (SHA-256 hex; descriptions less trailing whitespace, schemas in RFC 8785 form; ""
#               when absent) and are compared only when the snapshot pins tools.
# data.mcp_enforcement.deny holds the reasons of a refusal.
package mcp_enforcement

default allow := false

allow if count(deny) == 0

allowlist := data.mcp_allowlist

server := allowlist.servers[input.server]

remote_given if {
	is_string(input.remote_url)
	input.remote_url != ""
}

tool_given if is_object(input.tool)

deny contains "server_not_allowed" if not server

deny contains "server_version_not_allowed" if {
	server
	is_string(input.version)
	input.version != ""
	input.version != server.version
}

deny contains "remote_not_allowed" if {
	server
	remote_given
	not server.remotes[input.remote_url]
}

# The remotes the request may go through.
remotes contains remote if {
	remote_given
	remote := server.remotes[input.remote_url]
}

remotes contains remote if {
	not remote_given
	some remote in server.remotes
}

# The allowlist's entries of the tool on those remotes.
entries contains entry if {
	some remote in remotes
	entry := remote.tools[input.tool.name]
}

open_remote if {
	some remote in remotes
	remote.all_tools == true
}

deny contains "tool_not_allowed" if {
	server
	tool_given
	count(remotes) > 0
	count(entries) == 0
	not open_remote
}

deny contains "no_tools_allowed" if {
	server
	tool_given
	count(remotes) == 0
}

deny contains "tool_definition_changed" if {
	allowlist.pinned == true
	tool_given
	count(entries) > 0
	not pin_matches
}

pin_matches if {
	some entry in entries
	entry.description_sha256 == object.get(input.tool, "description_sha256", "")
	entry.input_schema_sha256 == object.get(input.tool, "input_schema_sha256", "")
	entry.output_schema_sha256 == object.get(input.tool, "output_schema_sha256", "")
}
