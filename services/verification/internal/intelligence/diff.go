package intelligence

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Diff compares two snapshots of a server field by field and classifies each difference by the rule
// table. Packages and remotes are paired by position (registries keep the publisher's order, so a
// reorder is reported as the changes it makes to what a client picks first); environment variables
// and headers are paired by name. The order of the result is fixed: status, version, repository,
// remotes, packages, then descriptive fields.
func Diff(from, to Snapshot) []FieldChange {
	d := &differ{}
	d.status(from.Status, to.Status)
	d.version(from.Server.Version, to.Server.Version)
	d.repository(from.Server.Repository, to.Server.Repository)
	d.remotes(from.Server.Remotes, to.Server.Remotes)
	d.packages(from.Server.Packages, to.Server.Packages)
	d.text("title", from.Server.Title, to.Server.Title, TitleChanged)
	d.text("description", from.Server.Description, to.Server.Description, DescriptionChanged)
	d.text("websiteUrl", from.Server.WebsiteURL, to.Server.WebsiteURL, WebsiteChanged)
	d.other(from.Server.Other, to.Server.Other)
	return d.out
}

type differ struct {
	out []FieldChange
}

func (d *differ) add(t ChangeType, field, old, new, summary string) {
	d.out = append(d.out, FieldChange{Field: field, Old: old, New: new, Type: t, Risk: RiskOf(t), Summary: summary})
}

func (d *differ) status(old, new string) {
	if old == new {
		return
	}
	switch new {
	case LifecycleDeprecated:
		d.add(StatusDeprecated, "status", old, new, "status changed from "+old+" to deprecated")
	case LifecycleDeleted:
		d.add(StatusDeleted, "status", old, new, "status changed from "+old+" to deleted")
	default:
		d.add(StatusReactivated, "status", old, new, "status changed from "+old+" back to "+new)
	}
}

func (d *differ) version(old, new string) {
	if old == new {
		return
	}
	if c, ok := compareSemver(old, new); ok && c > 0 {
		d.add(VersionDowngrade, "version", old, new, "version went back from "+old+" to "+new)
		return
	}
	d.add(VersionBump, "version", old, new, "version changed from "+old+" to "+new)
}

func (d *differ) repository(old, new *Repository) {
	var o, n Repository
	if old != nil {
		o = *old
	}
	if new != nil {
		n = *new
	}
	// The source (github, gitlab) is part of where the code lives, so it reads as part of the URL.
	oldLoc, newLoc := repoLocation(o), repoLocation(n)
	switch {
	case oldLoc == newLoc:
	case oldLoc == "":
		d.add(RepositoryAdded, "repository.url", "", newLoc, "repository declared: "+newLoc)
	case newLoc == "":
		d.add(RepositoryRemoved, "repository.url", oldLoc, "", "repository no longer declared (was "+oldLoc+")")
	default:
		d.add(RepositoryURLChanged, "repository.url", oldLoc, newLoc, "repository moved from "+oldLoc+" to "+newLoc)
	}
	switch {
	case o.ID == n.ID:
	case o.ID == "":
		d.add(RepositoryIDAdded, "repository.id", "", n.ID, "repository id declared: "+n.ID)
	case n.ID == "":
		d.add(RepositoryIDRemoved, "repository.id", o.ID, "", "repository id no longer declared (was "+o.ID+")")
	default:
		d.add(RepositoryIDChanged, "repository.id", o.ID, n.ID, "repository id changed from "+o.ID+" to "+n.ID+": the repository was recreated")
	}
	if o.Subfolder != n.Subfolder {
		d.add(RepositorySubfolderChanged, "repository.subfolder", o.Subfolder, n.Subfolder,
			fmt.Sprintf("repository subfolder changed from %q to %q", o.Subfolder, n.Subfolder))
	}
}

func repoLocation(r Repository) string {
	if r.URL == "" {
		return ""
	}
	if r.Source == "" {
		return r.URL
	}
	return r.Source + ":" + r.URL
}

func (d *differ) remotes(old, new []Transport) {
	for i := range max(len(old), len(new)) {
		field := fmt.Sprintf("remotes[%d]", i)
		switch {
		case i >= len(old):
			d.add(RemoteAdded, field, "", describeTransport(new[i]), "new remote "+new[i].URL)
		case i >= len(new):
			d.add(RemoteRemoved, field, describeTransport(old[i]), "", "remote "+old[i].URL+" removed")
		default:
			o, n := old[i], new[i]
			if o.Type != n.Type {
				d.add(TransportChanged, field+".type", o.Type, n.Type, "remote transport changed from "+o.Type+" to "+n.Type)
			}
			if o.URL != n.URL {
				if oh, nh := hostOf(o.URL), hostOf(n.URL); oh != nh {
					d.add(RemoteHostChanged, field+".url", o.URL, n.URL, "remote host changed from "+oh+" to "+nh)
				} else {
					d.add(RemoteURLChanged, field+".url", o.URL, n.URL, "remote URL changed from "+o.URL+" to "+n.URL)
				}
			}
			d.inputs(field+".headers", "header", o.Headers, n.Headers, true)
		}
	}
}

// hostOf returns the lower-case host (with port) of a URL, or the URL itself when it has none (a
// template such as "{baseUrl}/mcp").
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return strings.ToLower(u.Host)
	}
	return raw
}

func describeTransport(t Transport) string {
	if t.URL == "" {
		return t.Type
	}
	return t.Type + " " + t.URL
}

func (d *differ) packages(old, new []Package) {
	for i := range max(len(old), len(new)) {
		field := fmt.Sprintf("packages[%d]", i)
		switch {
		case i >= len(old):
			d.add(PackageAdded, field, "", describePackage(new[i]), "new package "+describePackage(new[i]))
		case i >= len(new):
			d.add(PackageRemoved, field, describePackage(old[i]), "", "package "+describePackage(old[i])+" removed")
		default:
			d.pkg(field, old[i], new[i])
		}
	}
}

func describePackage(p Package) string {
	s := p.RegistryType + ":" + p.Identifier
	if p.Version != "" {
		s += "@" + p.Version
	}
	return s
}

func (d *differ) pkg(field string, o, n Package) {
	if o.RegistryType != n.RegistryType {
		d.add(PackageRegistryChanged, field+".registryType", o.RegistryType, n.RegistryType,
			"package registry changed from "+o.RegistryType+" to "+n.RegistryType)
	}
	if o.RegistryBaseURL != n.RegistryBaseURL {
		d.add(PackageRegistryChanged, field+".registryBaseUrl", o.RegistryBaseURL, n.RegistryBaseURL,
			"package registry URL changed from "+o.RegistryBaseURL+" to "+n.RegistryBaseURL)
	}
	if o.Identifier != n.Identifier {
		d.add(PackageIdentifierChanged, field+".identifier", o.Identifier, n.Identifier,
			"package identifier changed from "+o.Identifier+" to "+n.Identifier)
	}
	if o.Version != n.Version {
		d.add(PackageVersionChanged, field+".version", o.Version, n.Version,
			"package "+n.Identifier+" version changed from "+o.Version+" to "+n.Version)
	}
	switch {
	case o.FileSHA256 == n.FileSHA256:
	case o.FileSHA256 == "":
		d.add(PackageHashAdded, field+".fileSha256", "", n.FileSHA256, "package "+n.Identifier+" now declares its SHA-256")
	case n.FileSHA256 == "":
		d.add(PackageHashRemoved, field+".fileSha256", o.FileSHA256, "", "package "+n.Identifier+" no longer declares its SHA-256")
	case o.Version == n.Version:
		d.add(PackageHashChanged, field+".fileSha256", o.FileSHA256, n.FileSHA256,
			"package "+n.Identifier+" SHA-256 changed under the same version "+n.Version)
	default:
		d.add(PackageReleaseChanged, field+".fileSha256", o.FileSHA256, n.FileSHA256,
			"package "+n.Identifier+" SHA-256 changed with version "+n.Version)
	}
	if o.RuntimeHint != n.RuntimeHint {
		d.add(PackageRuntimeChanged, field+".runtimeHint", o.RuntimeHint, n.RuntimeHint,
			"package runtime changed from "+o.RuntimeHint+" to "+n.RuntimeHint)
	}
	if o.RuntimeArguments != n.RuntimeArguments {
		d.add(PackageArgumentsChanged, field+".runtimeArguments", o.RuntimeArguments, n.RuntimeArguments, "package runtime arguments changed")
	}
	if o.PackageArguments != n.PackageArguments {
		d.add(PackageArgumentsChanged, field+".packageArguments", o.PackageArguments, n.PackageArguments, "package arguments changed")
	}
	if o.Transport.Type != n.Transport.Type {
		d.add(TransportChanged, field+".transport.type", o.Transport.Type, n.Transport.Type,
			"package transport changed from "+o.Transport.Type+" to "+n.Transport.Type)
	}
	if o.Transport.URL != n.Transport.URL {
		d.add(TransportChanged, field+".transport.url", o.Transport.URL, n.Transport.URL,
			"package transport URL changed from "+o.Transport.URL+" to "+n.Transport.URL)
	}
	d.inputs(field+".transport.headers", "header", o.Transport.Headers, n.Transport.Headers, true)
	d.inputs(field+".environmentVariables", "environment variable", o.EnvironmentVariables, n.EnvironmentVariables, false)
}

// inputs pairs environment variables (by exact name) or headers (by case-insensitive name, as HTTP
// does) and classifies what was added, removed or tightened.
func (d *differ) inputs(field, kind string, old, new []Input, foldCase bool) {
	key := func(in Input) string {
		if foldCase {
			return strings.ToLower(in.Name)
		}
		return in.Name
	}
	before := make(map[string]Input, len(old))
	for _, in := range old {
		before[key(in)] = in
	}
	seen := make(map[string]bool, len(new))
	for _, n := range new {
		k := key(n)
		seen[k] = true
		f := field + "." + n.Name
		o, existed := before[k]
		switch {
		case !existed && n.IsSecret:
			d.add(SecretAdded, f, "", describeInput(n), "new secret "+kind+" "+n.Name)
		case !existed && n.IsRequired:
			d.add(RequiredInputAdded, f, "", describeInput(n), "new required "+kind+" "+n.Name)
		case !existed:
			d.add(InputAdded, f, "", describeInput(n), "new optional "+kind+" "+n.Name)
		case !o.IsSecret && n.IsSecret:
			d.add(SecretAdded, f, describeInput(o), describeInput(n), kind+" "+n.Name+" is now secret")
		case !o.IsRequired && n.IsRequired:
			d.add(RequiredInputAdded, f, describeInput(o), describeInput(n), kind+" "+n.Name+" is now required")
		case o.Default != n.Default || o.Value != n.Value || o.Format != n.Format || o.IsRequired != n.IsRequired || o.IsSecret != n.IsSecret:
			d.add(InputChanged, f, describeInput(o), describeInput(n), kind+" "+n.Name+" changed")
		}
	}
	var removed []string
	for k := range before {
		if !seen[k] {
			removed = append(removed, k)
		}
	}
	slices.Sort(removed) // map order is random; the diff is not
	for _, k := range removed {
		o := before[k]
		d.add(InputRemoved, field+"."+o.Name, describeInput(o), "", kind+" "+o.Name+" removed")
	}
}

// describeInput renders an input as compact JSON with the fields the rules read.
func describeInput(in Input) string {
	b, _ := json.Marshal(struct {
		Name       string `json:"name"`
		IsRequired bool   `json:"isRequired,omitempty"`
		IsSecret   bool   `json:"isSecret,omitempty"`
		Format     string `json:"format,omitempty"`
		Default    string `json:"default,omitempty"`
		Value      string `json:"value,omitempty"`
	}{in.Name, in.IsRequired, in.IsSecret, in.Format, in.Default, in.Value})
	return string(b)
}

func (d *differ) text(field, old, new string, t ChangeType) {
	if old != new {
		d.add(t, field, old, new, field+" edited")
	}
}

func (d *differ) other(old, new map[string]string) {
	keys := make([]string, 0, len(old)+len(new))
	for k := range old {
		keys = append(keys, k)
	}
	for k := range new {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if old[k] != new[k] {
			d.add(MetadataChanged, k, old[k], new[k], k+" changed")
		}
	}
}
