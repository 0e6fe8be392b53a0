-- Run once by the postgres image on an empty data volume (docker-entrypoint-initdb.d):
-- each service owns its own database; the services create their tables themselves at start.
CREATE DATABASE verification;
CREATE DATABASE scoring;
CREATE DATABASE ingestion;
