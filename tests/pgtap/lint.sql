-- Catalog lint over schema brooq: comments, PUBLIC execute, pinned search_path,
-- SECURITY DEFINER where needed, errors with a SQLSTATE and a HINT, hot paths
-- without EXCEPTION blocks or dynamic SQL, parameter names, qualified tables.
-- Each test lists the offending routines, so a failure says what to fix.
begin;
select plan(27);

create temp view routine as  -- dropped with the rollback
select p.oid, p.oid::regprocedure::text as name, p.proname::text as proname, p.prokind, p.prosecdef, p.proconfig,
       p.proacl, p.prosrc, p.proretset, p.prorettype, p.proargnames, p.pronargs, p.proowner,
       obj_description(p.oid, 'pg_proc') as comment, l.lanname::text as language,
       p.proname !~ '^_' as api
  from pg_proc p join pg_language l on l.oid = p.prolang
 where p.pronamespace = 'brooq'::regnamespace;

-- Structure: comments ----------------------------------------------------------

select isnt_empty($$ select * from routine $$, 'schema brooq has routines to lint');
select is_empty($$ select name from routine where coalesce(comment, '') = '' $$, 'every function and procedure has a COMMENT');
select is_empty($$
    select r.name, e.state
      from routine r
     cross join lateral (
           select distinct case m[1] when 'null_value_not_allowed' then '22004' when 'invalid_parameter_value' then '22023'
                                     when 'undefined_object' then '42704' when 'program_limit_exceeded' then '54000'
                                     when 'object_not_in_prerequisite_state' then '55000' else m[1] end as state
             from regexp_matches(r.prosrc, '''(null_value_not_allowed|invalid_parameter_value|undefined_object|program_limit_exceeded|object_not_in_prerequisite_state|[0-9A-Z]{5})''', 'g') m
           ) e
     where r.api and position(e.state in r.comment) = 0 $$,
    'the COMMENT of every API routine names each SQLSTATE its body raises');
select is_empty($$
    select c.oid::regclass::text from pg_class c
     where c.relnamespace = 'brooq'::regnamespace and c.relkind in ('r', 'v')
       and coalesce(obj_description(c.oid, 'pg_class'), '') = ''
    union all
    select t.oid::regtype::text from pg_type t
     where t.typnamespace = 'brooq'::regnamespace and t.typtype in ('c', 'd')
       and not exists (select from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
       and coalesce(obj_description(t.oid, 'pg_type'), '') = '' $$,
    'every table, view, row type and domain has a COMMENT');

-- Privileges: nothing for PUBLIC ----------------------------------------------------

select is_empty($$ select name from routine where proacl is null $$,
    'no routine has a NULL ACL (NULL means PUBLIC may execute it)');
select is_empty($$ select r.name from routine r, aclexplode(r.proacl) a where a.grantee = 0 $$,
    'no routine is executable by PUBLIC');
select is_empty($$ select r.name from routine r where r.proowner <> (select nspowner from pg_namespace where nspname = 'brooq') $$,
    'every routine belongs to the owner of schema brooq');

-- Security: SECURITY DEFINER and the pinned search_path ---------------------------------

select is_empty($$ select name, proconfig from routine where prosecdef
                     and proconfig is distinct from array['search_path=pg_catalog, pg_temp']
                     and proconfig[1:2] is distinct from array['search_path=pg_catalog, pg_temp',
                                                               'plan_cache_mode=force_generic_plan'] $$,
    'every SECURITY DEFINER routine pins search_path = pg_catalog, pg_temp and sets nothing else but the plan settings');
select is_empty($$ select name, proconfig from routine
                    where proconfig[3:] <> '{}' and not proconfig[3:] <@ array['enable_seqscan=off', 'jit=off'] $$,
    'the plan settings are plan_cache_mode, enable_seqscan and jit');
-- A worker's calls plan their statements once (docs/performance.md, "Generic plans"):
-- with custom plans, a claim of one job from a backlog spent more time planning
-- than running.
select set_eq($$ select name from routine where 'plan_cache_mode=force_generic_plan' = any(proconfig) $$,
    array['brooq.claim(text,text[],integer,interval)',
          'brooq.heartbeat(text,bigint[],interval,bigint[],jsonb[])',
          'brooq.settle_many(text,bigint[],bigint[],text[],text[],interval[],jsonb[])'],
    'the worker''s hot path (claim, heartbeat, settle_many) runs on generic plans');
-- ... made once, maybe on a table whose statistics say it is empty: they must still
-- probe indexes as it grows (tests/test_sql_plans.py)
-- (and the workflows' private releases, whichever function calls them: cancel, reap,
-- retry and flush set nothing of their own, and a chain's edges are made on a table
-- whose statistics may say it is empty)
select set_eq($$ select name from routine where 'enable_seqscan=off' = any(proconfig) $$,
    array['brooq.claim(text,text[],integer,interval)',
          'brooq.heartbeat(text,bigint[],interval,bigint[],jsonb[])',
          'brooq.settle_many(text,bigint[],bigint[],text[],text[],interval[],jsonb[])',
          'brooq._release(bigint[],text[])', 'brooq._release_missed(integer)', 'brooq._rearm(bigint[],boolean)'],
    'the generic plans of the hot path and of the workflows'' releases never scan brooq.job whole');
-- ... and never compiled: the generic plan of a claim from several topics was estimated
-- above jit_above_cost on a large table, and JIT compiled it at every call (44-82 ms);
-- enable_seqscan = off prices any seq scan left above it
select set_eq($$ select name from routine where 'jit=off' = any(proconfig) $$,
    array['brooq.claim(text,text[],integer,interval)',
          'brooq.heartbeat(text,bigint[],interval,bigint[],jsonb[])',
          'brooq.settle_many(text,bigint[],bigint[],text[],text[],interval[],jsonb[])',
          'brooq._release(bigint[],text[])', 'brooq._release_missed(integer)', 'brooq._rearm(bigint[],boolean)'],
    'the hot path and the workflows'' releases never compile their plans with JIT');
select set_eq($$ select name from routine where not coalesce(proconfig @> array['search_path=pg_catalog, pg_temp'], false) $$,
    array['brooq._now()', 'brooq._backoff(interval,interval,integer)',
          'brooq._available_at(timestamp with time zone,timestamp with time zone,interval)',
          'brooq.purge_all(integer,integer)', 'brooq._duration_ok(interval)'],
    'the only routines without a pinned search_path are the documented exceptions');
select case when to_regproc('plpgsql_check_function_tb') is null
            then skip('plpgsql_check is not installed in this database', 1)
            else is_empty($$
                select r.name, c.level, c.message, c.lineno
                  from routine r
                 cross join lateral plpgsql_check_function_tb(r.oid, fatal_errors => false) c
                 where r.language = 'plpgsql'
                   and not (to_regnamespace('cron') is null and c.message ~ 'cron|v_name') $$,
                'plpgsql_check finds no error and no warning in any PL/pgSQL routine') end;
select is_empty($$ select name from routine where prosecdef and (proconfig is null or not proconfig @> array['search_path=pg_catalog, pg_temp']) $$,
    'none of the exceptions is SECURITY DEFINER');
-- health reads pg_stat_activity with the caller's rights (PostgreSQL shows a role
-- only what it may see); its job checks come from the definer _health_jobs
select set_eq($$ select name from routine where api and not prosecdef $$,
    array['brooq.purge_all(integer,integer)', 'brooq.health()'],
    'every API routine is SECURITY DEFINER but the committing procedure purge_all (which only calls brooq.purge) and health');
select set_eq($$ select name from routine where not api and prosecdef $$, array['brooq._health_jobs()'],
    'no private helper is SECURITY DEFINER (they run inside the API''s rights) but health''s job checks');
select is_empty($$ select name from routine where language not in ('sql', 'plpgsql') $$, 'every routine is SQL or PL/pgSQL');
select is_empty($$
    select name, m[1] from routine, regexp_matches(prosrc, '(\m(from|join|update|into|using)\s+(job|topic)\M)(?!\s*")', 'gi') m $$,
    'every table reference in a body is schema-qualified (brooq.job, brooq.topic)');

-- Errors: a SQLSTATE (never P0001) and a HINT ------------------------------------------

select is_empty($$
    select name, raises, errcodes from (
        select name,
               (select count(*) from regexp_matches(prosrc, '\mraise\s+exception\M', 'gi')) as raises,
               (select count(*) from regexp_matches(prosrc, '\merrcode\s*=', 'gi')) as errcodes
          from routine) s
     where raises <> errcodes $$,
    'every RAISE EXCEPTION names its errcode (none falls back to P0001)');
select is_empty($$ select name from routine where prosrc ~* '\mraise\s*(''|;)' $$,
    'no bare RAISE ''message'' (default level EXCEPTION, P0001) and no re-raise');
select is_empty($$ select name, m[2] from routine, regexp_matches(prosrc, '(\mraise\s+exception\s+(''[^'']*'')[^;]*;)', 'gi') m
                    where m[1] !~* '\mhint\s*=' $$,
    'every RAISE EXCEPTION gives a HINT that says how to fix the call');
select is_empty($$ select name, m[1] from routine, regexp_matches(prosrc, '\merrcode\s*=\s*''(P0001|raise_exception)''', 'gi') m $$,
    'no RAISE names P0001 explicitly');

-- Style: hot paths, parameters, results ----------------------------------------------------

select is_empty($$ select name from routine
                   where proname in ('enqueue', 'enqueue_many', 'claim', 'settle', 'settle_many', 'heartbeat')
                     and (prosrc ~* '\mexception\s+when\M' or prosrc ~* '\mexecute\M') $$,
    'the hot path (enqueue, enqueue_many, claim, settle, settle_many, heartbeat) has no EXCEPTION block and no dynamic SQL');
select is_empty($$ select r.name, a from routine r, unnest(r.proargnames) a join pg_get_keywords() k on k.word = a
                    where k.catcode <> 'U' $$,
    'no parameter name is a reserved SQL keyword (named notation works without quoting)');
select is_empty($$ select name from routine where api and pronargs > 0
                     and (proargnames is null or '' = any (proargnames[1:pronargs])) $$,
    'every parameter of an API routine has a name');
-- (the private unnest helpers of settle_many and heartbeat return TABLE: no client reads them)
select is_empty($$ select name from routine where api and proretset and prorettype = 'record'::regtype $$,
    'no API routine returns SETOF record: results are named row types');

select * from finish();
rollback;
