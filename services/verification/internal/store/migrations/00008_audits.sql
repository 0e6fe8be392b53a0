-- +goose Up
-- Audit reports, as the audit routes answered them. A report is evidence, so a row never changes.
-- The caller's headers for the target are not stored anywhere. issuer and subject are the audit
-- token's, and only a token of the same issuer and subject reads the report again.
CREATE TABLE audits (
    id         uuid PRIMARY KEY,
    kind       text        NOT NULL CHECK (kind IN ('mcp', 'readiness')),
    url        text        NOT NULL,
    issuer     text        NOT NULL,
    subject    text        NOT NULL,
    verdict    text        CHECK (verdict IN ('pass', 'warn', 'fail')),
    score      integer     CHECK (score BETWEEN 0 AND 100),
    report     jsonb       NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX audits_subject_created ON audits (issuer, subject, created_at DESC);

-- +goose StatementBegin
CREATE FUNCTION reject_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audits is immutable: % rejected', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audits_immutable BEFORE UPDATE ON audits
    FOR EACH ROW EXECUTE FUNCTION reject_audit_change();

-- +goose Down
DROP TABLE audits;
DROP FUNCTION reject_audit_change;
