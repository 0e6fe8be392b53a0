-- +goose Up
-- Data-feed artifacts: immutable exports in the blob store. created_at is unique per dataset, since it
-- is the keyset of the artifact listing (the `before` cursor).
CREATE TABLE feed_artifacts (
    id         uuid PRIMARY KEY,
    dataset    text        NOT NULL,
    format     text        NOT NULL CHECK (format IN ('jsonl', 'csv')),
    sha256     text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes bigint      NOT NULL,
    rows       bigint      NOT NULL,
    blob_key   text        NOT NULL,
    created_at timestamptz NOT NULL,
    UNIQUE (dataset, created_at)
);

-- +goose StatementBegin
CREATE FUNCTION reject_feed_artifact_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'feed_artifacts is immutable: % rejected', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER feed_artifacts_immutable BEFORE UPDATE OR DELETE ON feed_artifacts
    FOR EACH ROW EXECUTE FUNCTION reject_feed_artifact_change();

-- +goose Down
DROP TABLE feed_artifacts;
DROP FUNCTION reject_feed_artifact_change;
