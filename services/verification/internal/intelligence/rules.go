package intelligence

// ChangeType names a row of the rule table.
type ChangeType string

// Rule is one row of the rule table: a kind of change, its fixed risk, and when it applies.
type Rule struct {
	Type ChangeType
	Risk Risk
	When string
}

// The change types. Each has one fixed risk (Rules), so that a feed filtered by type is also
// homogeneous in risk.
const (
	RemoteHostChanged          ChangeType = "remote_host_changed"
	RemoteURLChanged           ChangeType = "remote_url_changed"
	RemoteAdded                ChangeType = "remote_added"
	RemoteRemoved              ChangeType = "remote_removed"
	TransportChanged           ChangeType = "transport_changed"
	RepositoryURLChanged       ChangeType = "repository_url_changed"
	RepositoryAdded            ChangeType = "repository_added"
	RepositoryRemoved          ChangeType = "repository_removed"
	RepositoryIDChanged        ChangeType = "repository_id_changed"
	RepositoryIDAdded          ChangeType = "repository_id_added"
	RepositoryIDRemoved        ChangeType = "repository_id_removed"
	RepositorySubfolderChanged ChangeType = "repository_subfolder_changed"
	PackageAdded               ChangeType = "package_added"
	PackageRemoved             ChangeType = "package_removed"
	PackageIdentifierChanged   ChangeType = "package_identifier_changed"
	PackageRegistryChanged     ChangeType = "package_registry_changed"
	PackageHashChanged         ChangeType = "package_hash_changed"
	PackageReleaseChanged      ChangeType = "package_release_changed"
	PackageHashRemoved         ChangeType = "package_hash_removed"
	PackageHashAdded           ChangeType = "package_hash_added"
	PackageVersionChanged      ChangeType = "package_version_changed"
	PackageRuntimeChanged      ChangeType = "package_runtime_changed"
	PackageArgumentsChanged    ChangeType = "package_arguments_changed"
	SecretAdded                ChangeType = "secret_added"
	RequiredInputAdded         ChangeType = "required_input_added"
	InputAdded                 ChangeType = "input_added"
	InputRemoved               ChangeType = "input_removed"
	InputChanged               ChangeType = "input_changed"
	StatusDeprecated           ChangeType = "status_deprecated"
	StatusDeleted              ChangeType = "status_deleted"
	StatusReactivated          ChangeType = "status_reactivated"
	VersionBump                ChangeType = "version_bump"
	VersionDowngrade           ChangeType = "version_downgrade"
	DescriptionChanged         ChangeType = "description_changed"
	TitleChanged               ChangeType = "title_changed"
	WebsiteChanged             ChangeType = "website_changed"
	MetadataChanged            ChangeType = "metadata_changed"
)

// Rules is the classification table. The question behind every risk: does the change alter what code
// a client runs, where it connects, or what secrets it hands over? Then it is high. Does it alter how
// the same code is started, or remove a safeguard that is not itself an attack? Medium. Is it
// informational, or does it only take something away? Low.
//
// Exceptions to "changed means high", argued:
//   - remote_removed, package_removed, input_removed are low: a client loses an option, it gains no
//     new endpoint, code or input to hand over.
//   - repository_added and repository_id_added are low: declaring a source adds transparency. But
//     repository_id_removed is high, like repository_id_changed: dropping the id hides a resurrection
//     (a deleted and recreated repository under the same URL) from exactly this check.
//   - repository_removed is medium: the source link is gone, which hinders review, but nothing that
//     runs changed.
//   - package_release_changed is medium: a new fileSha256 that comes with a new package version is
//     what every release of a hashed package (mcpb) looks like; the same hash change under an unchanged
//     package version (package_hash_changed) means the artifact was swapped, and is high.
//   - package_hash_added is low (integrity check added); package_hash_removed is high (a client no
//     longer verifies what it downloads).
//   - input_changed (default, value or format of an existing variable or header) and
//     package_arguments_changed / package_runtime_changed are medium: they change how the same code is
//     started, a known command-injection surface (the registry schema warns about arguments), but are
//     routine in legitimate releases.
//   - status_reactivated (deprecated or deleted back to active) is medium: a withdrawn server coming
//     back deserves a look, but by itself introduces nothing new.
//   - version_downgrade is medium: the latest version going backwards suggests a rollback or a
//     republish; whatever changed in content is reported by its own rule.
//   - version_bump, description_changed, title_changed, website_changed (the homepage link is shown,
//     never fetched or run) and metadata_changed (icons, $schema, _meta) are low.
var Rules = []Rule{
	{RemoteHostChanged, RiskHigh, "a remote's URL points to another host"},
	{RemoteURLChanged, RiskHigh, "a remote's URL changed on the same host (scheme, port, path or query)"},
	{RemoteAdded, RiskHigh, "a new remote endpoint that clients may connect to"},
	{RemoteRemoved, RiskLow, "a remote endpoint is no longer listed"},
	{TransportChanged, RiskHigh, "a remote's or package's transport type changed, or a package transport's URL"},
	{RepositoryURLChanged, RiskHigh, "repository.url (or its source) changed to another repository"},
	{RepositoryAdded, RiskLow, "a repository is declared where there was none"},
	{RepositoryRemoved, RiskMedium, "the repository is no longer declared"},
	{RepositoryIDChanged, RiskHigh, "repository.id changed: the repository was recreated (resurrection)"},
	{RepositoryIDAdded, RiskLow, "repository.id is declared where there was none"},
	{RepositoryIDRemoved, RiskHigh, "repository.id is no longer declared, hiding a resurrection"},
	{RepositorySubfolderChanged, RiskMedium, "repository.subfolder changed: other code in the same repository"},
	{PackageAdded, RiskHigh, "a new package: new code a client may install"},
	{PackageRemoved, RiskLow, "a package is no longer listed"},
	{PackageIdentifierChanged, RiskHigh, "a package's identifier changed: other code is installed"},
	{PackageRegistryChanged, RiskHigh, "a package's registryType or registryBaseUrl changed"},
	{PackageHashChanged, RiskHigh, "a package's fileSha256 changed under the same package version"},
	{PackageReleaseChanged, RiskMedium, "a package's fileSha256 changed together with its version"},
	{PackageHashRemoved, RiskHigh, "a package's fileSha256 is no longer declared"},
	{PackageHashAdded, RiskLow, "a package's fileSha256 is declared where there was none"},
	{PackageVersionChanged, RiskLow, "a package's version changed"},
	{PackageRuntimeChanged, RiskMedium, "a package's runtimeHint changed (npx, uvx, docker, ...)"},
	{PackageArgumentsChanged, RiskMedium, "a package's runtime or package arguments changed"},
	{SecretAdded, RiskHigh, "a new secret environment variable or header, or an existing one became secret"},
	{RequiredInputAdded, RiskHigh, "a new required environment variable or header, or an existing one became required"},
	{InputAdded, RiskLow, "a new optional, non-secret environment variable or header"},
	{InputRemoved, RiskLow, "an environment variable or header is no longer listed"},
	{InputChanged, RiskMedium, "an environment variable's or header's default, value or format changed"},
	{StatusDeprecated, RiskHigh, "the status became deprecated"},
	{StatusDeleted, RiskHigh, "the status became deleted"},
	{StatusReactivated, RiskMedium, "the status went from deprecated or deleted back to active"},
	{VersionBump, RiskLow, "the version increased (or changed, when not semantic)"},
	{VersionDowngrade, RiskMedium, "the version decreased (semantic versions)"},
	{DescriptionChanged, RiskLow, "the description changed"},
	{TitleChanged, RiskLow, "the title changed"},
	{WebsiteChanged, RiskLow, "websiteUrl changed"},
	{MetadataChanged, RiskLow, "another top-level member changed (icons, $schema, _meta, ...)"},
}

var riskOf = riskTable(Rules)

// riskTable maps each change type of a rule table to its risk.
func riskTable(rules []Rule) map[ChangeType]Risk {
	m := make(map[ChangeType]Risk, len(rules))
	for _, r := range rules {
		m[r.Type] = r.Risk
	}
	return m
}

// RiskOf returns the risk of a change type ("" for an unknown one).
func RiskOf(t ChangeType) Risk { return riskOf[t] }
