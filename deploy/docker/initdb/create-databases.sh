#!/usr/bin/env bash
# Run once by the postgres image on an empty data volume (docker-entrypoint-initdb.d), as the image's
# superuser. Each service owns its own database, and gets two roles there (docs/database-roles.md):
#   <service>_owner  owns the database and every table: the migrations run as it
#                    (<SVC>_MIGRATE_DATABASE_URL), and nothing else does;
#   <service>_app    the role the service serves as (<SVC>_DATABASE_URL): no superuser, owns nothing,
#                    SELECT/INSERT/UPDATE/DELETE on tables and USAGE on sequences through the owner's
#                    default privileges; no TRUNCATE, cannot disable triggers.
# Passwords come from <SERVICE>_OWNER_PASSWORD and <SERVICE>_APP_PASSWORD (docker-compose.yml).
set -euo pipefail

for svc in verification scoring ingestion; do
  up=${svc^^}
  owner_pw_var=${up}_OWNER_PASSWORD
  app_pw_var=${up}_APP_PASSWORD
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v db="$svc" -v owner="${svc}_owner" -v app="${svc}_app" \
    -v owner_pw="${!owner_pw_var:-${svc}_owner}" -v app_pw="${!app_pw_var:-${svc}_app}" <<'SQL'
CREATE ROLE :"owner" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_pw';
CREATE ROLE :"app" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'app_pw';
CREATE DATABASE :"db" OWNER :"owner";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO :"app";
\connect :"db"
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO :"app";
SQL
done
