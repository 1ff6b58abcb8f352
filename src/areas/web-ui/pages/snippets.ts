import { fullName } from "./present.js";

export interface Snippet {
  readonly label: string;
  readonly code: string;
}

/**
 * "How to use it": commands for upack, pgutil, curl and a Jenkins pipeline against a universal feed. The curl lines are
 * the README's own (Universal packages); upack and pgutil use their documented options (upack's
 * README: push/install; pgutil: sources add, packages upload, upack install). `$KEY` stands for an
 * API key the reader creates; a package of the page replaces the README's example package.
 */
export function universalFeedSnippets(
  base: string,
  feedUrl: string,
  feedName: string,
  pkg: { group: string; name: string; version: string } = { group: "acme/tools", name: "my-app", version: "1.2.0" },
): Snippet[] {
  const id = fullName(pkg.group, pkg.name);
  const file = `${pkg.name}-${pkg.version}.upack`;
  const downloadPath = [...(pkg.group === "" ? [] : [pkg.group]), pkg.name].join("/");
  return [
    {
      label: "upack",
      code: [
        `upack push ${file} ${feedUrl} --user=api:$KEY`,
        `upack install ${id} --source=${feedUrl} --target=./${pkg.name} --user=api:$KEY`,
      ].join("\n"),
    },
    {
      label: "pgutil",
      code: [
        `pgutil sources add --name=wharf --url=${base}/ --api-key=$KEY`,
        `pgutil packages upload --source=wharf --feed=${feedName} --input-file=${file}`,
        `pgutil upack install --source=wharf --feed=${feedName} --package=${id} --version=latest --target=./${pkg.name}`,
      ].join("\n"),
    },
    {
      label: "curl",
      code: [
        `curl -s --upload-file ${file} -H "X-ApiKey: $KEY" ${feedUrl}/upload`,
        `curl -s "${feedUrl}/versions?${pkg.group === "" ? "" : `group=${pkg.group}&`}name=${pkg.name}" -H "X-ApiKey: $KEY"`,
        `curl -sOJ "${feedUrl}/download/${downloadPath}?latest" -H "X-ApiKey: $KEY"`,
      ].join("\n"),
    },
    {
      // The inedo-proget plugin (docs/clients.md 3.7) asks /api/version, uploads to /upack/<feed>/upload
      // and downloads from /upack/<feed>/download/...: Wharf's URL and an API key are its whole setup.
      // Its pipeline steps are `uploadProgetPackage` and `downloadProgetPackage` (the plugin's @Symbol
      // names); downloadFormat is one of pkg, zip, tgz, unpack.
      label: "jenkins",
      code: [
        `// Manage Jenkins > System > ProGet: URL ${base}/ and an API key ($KEY)`,
        `uploadProgetPackage feedName: '${feedName}', groupName: '${pkg.group}', packageName: '${pkg.name}', version: '${pkg.version}', artifacts: 'dist/**'`,
        `downloadProgetPackage feedName: '${feedName}', groupName: '${pkg.group}', packageName: '${pkg.name}', version: '${pkg.version}', downloadFormat: 'pkg', downloadFolder: 'downloads'`,
      ].join("\n"),
    },
  ];
}
