import MsgKit
import MsgSupport

/// The inbox in msg's schema (schema 9, msg-inbox(1)): `inbox`, which an application
/// fills through `enqueue(draft jsonb)` and `enqueue_all(drafts jsonb)` inside its own
/// transactions, and which msg takes into the queue (``PostgresInbox``).
///
/// The functions check a draft as far as SQL can say what `msg compose` would refuse
/// (a clear error with SQLSTATE `MS001`); what only msg can tell (a header it
/// refuses, 30 February) makes the message dead with the reason when it is taken in,
/// never blocking the inbox. They run as the schema's owner (SECURITY DEFINER, with
/// a fixed search_path), and PUBLIC may not call them: an application's role is
/// granted USAGE on the schema and EXECUTE on the two, and nothing on the tables.
///
/// The id of a draft without one is made at once, so the application gets it back:
/// a UUIDv7 of the call's time whose next 40 bits are the row's sequence number,
/// so drafts enqueued in one millisecond keep their order in the queue. A draft's
/// own id is its idempotency key: given twice, one row. A commit notifies
/// `SCHEMA.inbox`, on which a watching msg listens.
enum PostgresInboxSchema {
    /// The SQLSTATE of a draft the functions refuse: class `MS` (an
    /// implementation-defined class, as the standard leaves those beginning I to Z).
    static let refused = "MS001"

    /// The channel a commit of rows notifies.
    static func channel(_ s: String) -> String { "\(s).inbox" }

    static func tables(_ s: String) -> [String] {
        [
            "CREATE SEQUENCE \(s).inbox_seq",
            """
            CREATE TABLE \(s).inbox (
                seq bigint NOT NULL PRIMARY KEY,
                id uuid NOT NULL UNIQUE,
                draft jsonb NOT NULL,
                inserted_at bigint NOT NULL
            )
            """,
            draftProblem(s, replacing: false),
            // Stores a draft already checked; its id.
            """
            CREATE FUNCTION \(s).enqueue_checked(draft jsonb) RETURNS uuid
            LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$
            DECLARE
                n bigint := nextval('\(s).inbox_seq');
                ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
                lo bigint;
                made uuid;
            BEGIN
                IF coalesce(jsonb_typeof(draft->'id'), 'null') = 'string' THEN
                    made := (draft->>'id')::uuid;
                ELSE
                    lo := ((n & 268435455) << 34) | floor(random() * 17179869184)::bigint;
                    made := (lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex((n >> 28) & 4095), 3, '0')
                             || to_hex(8 | ((lo >> 60) & 3)) || lpad(to_hex(lo & 1152921504606846975), 15, '0'))::uuid;
                END IF;
                INSERT INTO \(s).inbox (seq, id, draft, inserted_at) VALUES (n, made, draft, ms) ON CONFLICT (id) DO NOTHING;
                RETURN made;
            END
            $f$
            """,
            """
            CREATE FUNCTION \(s).enqueue(draft jsonb) RETURNS uuid
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
            DECLARE
                problem text := \(s).draft_problem(draft);
            BEGIN
                IF problem IS NOT NULL THEN
                    RAISE EXCEPTION 'msg.enqueue: %', problem USING ERRCODE = '\(refused)';
                END IF;
                PERFORM pg_notify('\(channel(s))', '');
                RETURN \(s).enqueue_checked(draft);
            END
            $f$
            """,
            """
            CREATE FUNCTION \(s).enqueue_all(drafts jsonb) RETURNS SETOF uuid
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
            DECLARE
                d jsonb;
                i integer := 0;
                problem text;
            BEGIN
                IF drafts IS NULL OR jsonb_typeof(drafts) <> 'array' THEN
                    RAISE EXCEPTION 'msg.enqueue_all: expected an array of drafts, got %', coalesce(jsonb_typeof(drafts), 'null')
                        USING ERRCODE = '\(refused)';
                END IF;
                FOR d IN SELECT value FROM jsonb_array_elements(drafts) LOOP
                    i := i + 1;
                    problem := \(s).draft_problem(d);
                    IF problem IS NOT NULL THEN
                        RAISE EXCEPTION 'msg.enqueue_all: draft %: %', i, problem USING ERRCODE = '\(refused)';
                    END IF;
                    RETURN NEXT \(s).enqueue_checked(d);
                END LOOP;
                IF i > 0 THEN PERFORM pg_notify('\(channel(s))', ''); END IF;
            END
            $f$
            """,
            "REVOKE ALL ON FUNCTION \(s).draft_problem(jsonb), \(s).enqueue_checked(jsonb), \(s).enqueue(jsonb), \(s).enqueue_all(jsonb) FROM PUBLIC",
        ]
    }

    /// What is wrong with a draft, or NULL: the checks msg compose makes that SQL can
    /// make, and two more: a draft over msg's record limit, which msg would refuse
    /// after the application's commit, and a header named as a field (`subject`,
    /// which would be kept as an unknown field and the mail sent without it).
    /// `replacing`: schema 10 replaces schema 9's.
    static func draftProblem(_ s: String, replacing: Bool) -> String {
        """
        CREATE \(replacing ? "OR REPLACE " : "")FUNCTION \(s).draft_problem(draft jsonb) RETURNS text
        LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $f$
        DECLARE
            k text;
            v jsonb;
        BEGIN
            IF draft IS NULL OR jsonb_typeof(draft) <> 'object' THEN
                RETURN 'expected a draft object such as {"to":"bob","body":"hi"}, got ' || coalesce(jsonb_typeof(draft), 'null');
            END IF;
            IF octet_length(draft::text) > \(RecordLimits.maxRecordBytes) THEN
                RETURN 'the draft is ' || octet_length(draft::text) || ' bytes, over msg''s limit of \(RecordLimits.maxRecordBytes) bytes (1 MiB)';
            END IF;
            FOR k IN SELECT jsonb_object_keys(draft) LOOP
                IF \(headerNames) ? lower(replace(k, '-', '_')) THEN
                    RETURN 'unknown field "' || k || '" (did you mean "headers.' || (\(headerNames) ->> lower(replace(k, '-', '_'))) || '"?)';
                END IF;
            END LOOP;
            IF jsonb_typeof(draft->'to') IS DISTINCT FROM 'string' OR draft->>'to' = '' THEN
                RETURN CASE WHEN draft->'to' IS NULL OR jsonb_typeof(draft->'to') = 'null' THEN 'missing field "to"'
                            ELSE 'field "to" must be a non-empty string' END;
            END IF;
            IF jsonb_typeof(draft->'body') IS DISTINCT FROM 'string' THEN
                RETURN CASE WHEN draft->'body' IS NULL OR jsonb_typeof(draft->'body') = 'null' THEN 'missing field "body"'
                            ELSE 'field "body" must be a string, not ' || jsonb_typeof(draft->'body') END;
            END IF;
            IF coalesce(jsonb_typeof(draft->'from'), 'null') NOT IN ('string', 'null') THEN
                RETURN 'field "from" must be a string, not ' || jsonb_typeof(draft->'from');
            END IF;
            IF coalesce(jsonb_typeof(draft->'headers'), 'null') NOT IN ('object', 'null') THEN
                RETURN 'field "headers" must be an object of strings';
            END IF;
            IF jsonb_typeof(draft->'headers') = 'object' THEN
                FOR k, v IN SELECT * FROM jsonb_each(draft->'headers') LOOP
                    IF jsonb_typeof(v) <> 'string' THEN
                        RETURN 'field "headers.' || k || '" must be a string';
                    END IF;
                END LOOP;
            END IF;
            FOREACH k IN ARRAY ARRAY['not_before', 'expires_at'] LOOP
                IF coalesce(jsonb_typeof(draft->k), 'null') <> 'null' AND (jsonb_typeof(draft->k) <> 'string'
                    OR (draft->>k) !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$') THEN
                    RETURN 'field "' || k || '" must be an RFC 3339 time such as 2026-11-22T13:08:00.123Z';
                END IF;
            END LOOP;
            IF coalesce(jsonb_typeof(draft->'id'), 'null') <> 'null' AND (jsonb_typeof(draft->'id') <> 'string'
                OR (draft->>'id') !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$') THEN
                RETURN 'field "id" must be a lower-case UUID such as 01890a5d-ac96-774b-bcce-b302099a8057';
            END IF;
            RETURN NULL;
        END
        $f$
        """
    }

    /// The headers a draft names as fields by mistake (DraftFields), as a jsonb literal.
    private static var headerNames: String {
        let pairs = DraftFields.headers.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }
        return "'{\(pairs.joined(separator: ","))}'::jsonb"
    }
}
