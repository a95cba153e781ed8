-- Fencing: a write that a stale lock holder must not make.
-- Run it first, in the same transaction as the work it guards:
--   psql "$DB" -1 -v ON_ERROR_STOP=1 -v token="$RUNNER_FENCING_TOKEN" -f fence.sql -f work.sql
-- Once: CREATE TABLE fence (resource text PRIMARY KEY, token bigint NOT NULL);
-- The highest token seen is kept beside the data; a holder with a smaller one (its lock
-- was lost and another host has written since) fails here, and its work is rolled back.
-- Retries of one run share its token, so they pass.
SELECT set_config('runner.token', :'token', true) AS runner_token \gset
DO $$
BEGIN
    INSERT INTO fence (resource, token)
    VALUES ('schema', current_setting('runner.token')::bigint)
    ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
    WHERE fence.token <= EXCLUDED.token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'stale fencing token %: a newer lock holder has written',
            current_setting('runner.token');
    END IF;
END $$;
