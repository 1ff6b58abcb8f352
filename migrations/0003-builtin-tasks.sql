-- Built-in security tasks (compat.md section 9; ProGet ships "Administer" and "View & Download
-- Packages" under these names). Built-in tasks cannot be edited or deleted. Anonymous gets no
-- permission: an administrator grants what should be public (PRODUCT.md "Decisions").

-- Permissions are matched by lowercased keys; keep each scope as it was written too, so that the
-- security API lists "Production-Packages" rather than "production-packages".
ALTER TABLE permissions ADD COLUMN feed_name TEXT;
ALTER TABLE permissions ADD COLUMN feed_group TEXT;

INSERT INTO tasks (name, name_key, description, feed_scoped, built_in, attributes) VALUES
(
  'Administer', 'administer',
  'Allows everything, on every feed and every area (Admin_ConfigureProGet implies every other attribute).',
  0, 1,
  '["Feeds_ViewFeed","Feeds_DownloadPackage","Feeds_AddPackage","Feeds_PullPackage","Feeds_OverwritePackage","Feeds_DeletePackage","Feeds_UnlistPackage","Feeds_AcceptPackagePromotions","Feeds_CreateFeed","Feeds_Manage","Admin_ManageFeed","Admin_ManageConnectors","Admin_ConfigureProGet","Licenses_Manage","Projects_View","Projects_Manage","Projects_UploadSbom","Projects_ResolveIssue","Applications_View","Applications_Manage","Admin_ManageApplications","Admin_ConfigureBuildMaster","Releases_Manage","ReleasePackages_Create","ReleasePackages_Deploy","ReleasePackages_Force","ReleasePackages_Manage","Environments_View","Environments_Manage","Pipelines_Manage","Infrastructure_View","Infrastructure_Manage"]'
),
(
  'View & Download Packages', 'view & download packages',
  'Allows viewing feeds and downloading their packages.',
  1, 1,
  '["Feeds_ViewFeed","Feeds_DownloadPackage"]'
),
(
  'Publish Packages', 'publish packages',
  'Allows viewing, downloading, adding, pulling, overwriting, deleting, unlisting and accepting promoted packages.',
  1, 1,
  '["Feeds_ViewFeed","Feeds_DownloadPackage","Feeds_AddPackage","Feeds_PullPackage","Feeds_OverwritePackage","Feeds_DeletePackage","Feeds_UnlistPackage","Feeds_AcceptPackagePromotions"]'
),
(
  'Manage Feeds', 'manage feeds',
  'Allows everything on packages, and managing feed settings and connectors.',
  1, 1,
  '["Feeds_ViewFeed","Feeds_DownloadPackage","Feeds_AddPackage","Feeds_PullPackage","Feeds_OverwritePackage","Feeds_DeletePackage","Feeds_UnlistPackage","Feeds_AcceptPackagePromotions","Feeds_CreateFeed","Feeds_Manage","Admin_ManageFeed","Admin_ManageConnectors"]'
);
