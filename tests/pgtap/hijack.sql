-- A search_path hijack attempt. A schema of the caller's own (evil) and the
-- caller's temporary schema hold a table job and a table topic, and functions and
-- operators with the exact signatures brooq's bodies use (now, clock_timestamp,
-- current_setting, nextval, pg_notify, random, length, left, pg_column_size,
-- isfinite, cardinality, to_regnamespace; =, <>, <=, <, >, ~, !~). Each one
-- records its call in evil.log and answers whatever would break brooq. With
-- search_path = pg_temp, evil, pg_catalog, public, the roles call enqueue,
-- enqueue_many, claim, settle, heartbeat, cancel, reap, purge and declare_topic,
-- and their errors. Then, back on a normal path: every call acted on brooq.job
-- and brooq.topic, gave the normal answers and errors, and never called a
-- shadow. pgTAP itself is not called while the trap is set (its own functions
-- would fall into it), so the calls store their answers in psql variables and in
-- a table, and the assertions come after.
begin;
select plan(36);

-- Structure: the trap ---------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.hijack', max_attempts => 2, max_payload_bytes => 1000) $$, 'declare the topic');

create schema evil;
grant usage on schema evil to public;
create table evil.log (what text);
grant insert on evil.log to public;
create table public.hijack_answer (step text, sqlstate text);
grant insert on public.hijack_answer to public;
create table evil.job (like brooq.job including defaults);
create table evil.topic (like brooq.topic including defaults);
grant all on evil.job, evil.topic to public;
create temp table job (like brooq.job including defaults);
create temp table topic (like brooq.topic including defaults);
insert into pg_temp.topic (name, created_at, updated_at) values ('t.ghost', now(), now());
grant all on pg_temp.job, pg_temp.topic to public;

create function evil.now() returns timestamptz language plpgsql as
    $$ begin insert into evil.log values ('now'); return '1999-01-01 00:00:00+00'; end $$;
create function evil.clock_timestamp() returns timestamptz language plpgsql as
    $$ begin insert into evil.log values ('clock_timestamp'); return '1999-01-01 00:00:00+00'; end $$;
create function evil.current_setting(text, boolean) returns text language plpgsql as
    $$ begin insert into evil.log values ('current_setting'); return '1999-01-01 00:00:00+00'; end $$;
create function evil.nextval(regclass) returns bigint language plpgsql as
    $$ begin insert into evil.log values ('nextval'); return 1; end $$;
create function evil.pg_notify(text, text) returns void language plpgsql as
    $$ begin insert into evil.log values ('pg_notify'); end $$;
create function evil.random() returns double precision language plpgsql as
    $$ begin insert into evil.log values ('random'); return 0; end $$;
create function evil.length(text) returns integer language plpgsql as
    $$ begin insert into evil.log values ('length'); return 1; end $$;
create function evil.left(text, integer) returns text language plpgsql as
    $$ begin insert into evil.log values ('left'); return 'x'; end $$;
create function evil.pg_column_size(jsonb) returns integer language plpgsql as
    $$ begin insert into evil.log values ('pg_column_size'); return 1; end $$;
create function evil.isfinite(timestamptz) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('isfinite'); return true; end $$;
create function evil.cardinality(anyarray) returns integer language plpgsql as
    $$ begin insert into evil.log values ('cardinality'); return 1; end $$;
create function evil.to_regnamespace(text) returns regnamespace language plpgsql as
    $$ begin insert into evil.log values ('to_regnamespace'); return 'pg_catalog'::regnamespace; end $$;
create function evil.always(text, text) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('text op'); return true; end $$;
create function evil.never(text, text) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('text op'); return false; end $$;
create function evil.always(bigint, bigint) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('bigint op'); return true; end $$;
create function evil.always(integer, integer) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('integer op'); return true; end $$;
create function evil.never(integer, integer) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('integer op'); return false; end $$;
create function evil.always(timestamptz, timestamptz) returns boolean language plpgsql as
    $$ begin insert into evil.log values ('timestamptz op'); return true; end $$;
create operator evil.= (leftarg = text, rightarg = text, function = evil.always);
create operator evil.<> (leftarg = text, rightarg = text, function = evil.never);
create operator evil.~ (leftarg = text, rightarg = text, function = evil.always);
create operator evil.!~ (leftarg = text, rightarg = text, function = evil.never);
create operator evil.= (leftarg = bigint, rightarg = bigint, function = evil.always);
create operator evil.= (leftarg = integer, rightarg = integer, function = evil.always);
create operator evil.> (leftarg = integer, rightarg = integer, function = evil.never);
create operator evil.<> (leftarg = integer, rightarg = integer, function = evil.never);
create operator evil.<= (leftarg = timestamptz, rightarg = timestamptz, function = evil.always);
create operator evil.< (leftarg = timestamptz, rightarg = timestamptz, function = evil.always);

-- a control: what the trap does to a SECURITY DEFINER function that does not pin its path
create function public.hijack_unpinned() returns boolean language sql security definer as
    $$ select 'brooq'::text = 'not brooq'::text $$;
grant execute on function public.hijack_unpinned() to public;

select is((select count(*)::int from pg_proc where pronamespace = 'evil'::regnamespace), 18, 'the trap holds 18 shadow functions');
select is((select count(*)::int from pg_operator where oprnamespace = 'evil'::regnamespace), 10, 'and 10 shadow operators');

-- The trap is set: no pgTAP call until the path is reset ----------------------------

set local search_path = pg_temp, evil, pg_catalog, public;

set local role brooq_producer;
select id as h1, created as h1_created from brooq.enqueue('t.hijack', '{"n": 1}', idempotency_key => 'hk') \gset
select id as h1_again, created as h1_again_created from brooq.enqueue('t.hijack', '{"n": 2}', idempotency_key => 'hk') \gset
select id as h2 from brooq.enqueue('t.hijack', '{"n": 3}', available_at => '2030-01-01 00:00:00+00') \gset
select count(*) as many_n from brooq.enqueue_many('t.hijack', array['{"n": 4}', '{"n": 5}']::jsonb[], array['m1', 'm2']) \gset
do $$
begin
    begin
        perform brooq.enqueue('t.ghost');
        insert into public.hijack_answer values ('enqueue to a topic only in pg_temp.topic', 'none');
    exception when others then
        insert into public.hijack_answer values ('enqueue to a topic only in pg_temp.topic', sqlstate);
    end;
    begin
        perform brooq.enqueue('t.hijack', '{}', idempotency_key => pg_catalog.repeat('k', 300));
        insert into public.hijack_answer values ('enqueue with a 300-character key', 'none');
    exception when others then
        insert into public.hijack_answer values ('enqueue with a 300-character key', sqlstate);
    end;
    begin
        perform brooq.enqueue('t.hijack', pg_catalog.to_jsonb(pg_catalog.repeat('x', 2000)));
        insert into public.hijack_answer values ('enqueue of an oversize payload', 'none');
    exception when others then
        insert into public.hijack_answer values ('enqueue of an oversize payload', sqlstate);
    end;
    begin
        perform brooq.enqueue('t.hijack', available_at => 'infinity');
        insert into public.hijack_answer values ('enqueue at infinity', 'none');
    exception when others then
        insert into public.hijack_answer values ('enqueue at infinity', sqlstate);
    end;
    begin
        perform brooq.enqueue_many('t.hijack', array['{}', '{}']::jsonb[], array['one']);
        insert into public.hijack_answer values ('enqueue_many with keys of another length', 'none');
    exception when others then
        insert into public.hijack_answer values ('enqueue_many with keys of another length', sqlstate);
    end;
end
$$;
reset role;

set local role brooq_worker;
select id as c1, lease_token as c1_tok, attempt as c1_attempt, locked_until as c1_until
  from brooq.claim('hw', array['t.hijack'], lease => '30 seconds') \gset
select count(*) as hb_n from brooq.heartbeat('hw', array[:c1]::bigint[], '1 minute', array[:c1_tok]::bigint[]) \gset
select count(*) as hb_other from brooq.heartbeat('someone-else', array[:c1]::bigint[], '1 minute', array[:c1_tok]::bigint[]) \gset
select coalesce(brooq.settle(:c1, 'hw', :c1_tok # 1, 'done')::text, 'NULL') as stale_state \gset
select brooq.settle(:c1, 'hw', :c1_tok, 'failed', error => 'hijack test') as c1_state \gset
select count(*) as reaped from brooq.reap() \gset
do $$
begin
    begin
        perform brooq.claim('hw', array['t.ghost']);
        insert into public.hijack_answer values ('claim from a topic only in pg_temp.topic', 'none');
    exception when others then
        insert into public.hijack_answer values ('claim from a topic only in pg_temp.topic', sqlstate);
    end;
    begin
        perform brooq.settle(1, 'hw', 1, 'bogus');
        insert into public.hijack_answer values ('settle with an unknown outcome', 'none');
    exception when others then
        insert into public.hijack_answer values ('settle with an unknown outcome', sqlstate);
    end;
end
$$;
reset role;

set local role brooq_admin;
select brooq.cancel(:h2) as h2_canceled \gset
select brooq.cancel(:h2) as h2_canceled_again \gset
select brooq.purge() as purged \gset
do $$
begin
    begin
        perform brooq.declare_topic('Evil Topic');
        insert into public.hijack_answer values ('declare_topic with an invalid name', 'none');
    exception when others then
        insert into public.hijack_answer values ('declare_topic with an invalid name', sqlstate);
    end;
    begin
        perform brooq.pause_topic('t.ghost');
        insert into public.hijack_answer values ('pause a topic only in pg_temp.topic', 'none');
    exception when others then
        insert into public.hijack_answer values ('pause a topic only in pg_temp.topic', sqlstate);
    end;
end
$$;
reset role;

-- control: the trap works on code that does not pin its path
select count(*) as log_before_control from evil.log \gset
select now() as trap_now, ('a'::text = 'b'::text) as trap_eq, public.hijack_unpinned() as trap_definer \gset

-- The trap is lifted ------------------------------------------------------------------

reset search_path;

select is(:'trap_now'::timestamptz, timestamptz '1999-01-01 00:00:00+00', 'control: under the trap, a bare now() is the shadow');
select is(:'trap_eq'::boolean, true, 'control: under the trap, ''a'' = ''b'' is the shadow operator');
select is(:'trap_definer'::boolean, true,
    'control: a SECURITY DEFINER function without a pinned path falls into the trap');

select is(:log_before_control::int, 0, 'no brooq function called a shadow function or operator');
select is(:'h1_created'::boolean, true, 'enqueue created the job');
select results_eq(format($$ select topic, payload, idempotency_key, state::text, created_at from brooq.job where id = %s $$, :h1),
    $$ values ('t.hijack'::text, '{"n": 1}'::jsonb, 'hk'::text, 'failed'::text, timestamptz '2030-01-01 00:00:00+00') $$,
    'in brooq.job, with the frozen clock of brooq.now (not the shadow clock)');
select is(:h1_again::bigint, :h1::bigint, 'the repeated key found the job in brooq.job');
select is(:'h1_again_created'::boolean, false, 'and said created = false');
select is(:many_n::int, 2, 'enqueue_many returned one row per payload');
select is((select count(*)::int from brooq.job where topic = 't.hijack'), 4, 'brooq.job holds the four jobs of the topic');
select is((select count(distinct id)::int from brooq.job where topic = 't.hijack'), 4,
    'with distinct ids (the shadow nextval was not used)');
select is((select count(*)::int from evil.job), 0, 'evil.job is untouched');
select is((select count(*)::int from pg_temp.job), 0, 'the temporary job table is untouched');
select is((select count(*)::int from evil.topic), 0, 'evil.topic is untouched');
select results_eq($$ select name from pg_temp.topic $$, array['t.ghost'], 'the temporary topic table is untouched');
select is((select count(*)::int from brooq.topic where name = 't.ghost'), 0, 'no ghost topic got into brooq.topic');
select is(:c1::bigint, :h1::bigint, 'claim took the oldest job of brooq.job');
select is(:'c1_until'::timestamptz, timestamptz '2030-01-01 00:00:30+00', 'with a lease from the frozen clock');
select is(:hb_n::int, 1, 'heartbeat renewed the holder''s lease');
select is(:hb_other::int, 0, 'heartbeat of another worker renewed nothing (the = on text was not the shadow)');
select is(:'stale_state'::text, 'NULL', 'settle with a stale lease_token returned NULL (the = on bigint was not the shadow)');
select is(:'c1_state'::text, 'failed', 'settle wrote the failure');
select ok((select available_at between timestamptz '2030-01-01 00:00:00.5+00' and timestamptz '2030-01-01 00:00:01+00'
             from brooq.job where id = :c1), 'with the topic''s backoff');
select is(:reaped::int, 0, 'reap found no expired lease (the < on timestamptz was not the shadow)');
select is(:'h2_canceled'::text, 't', 'cancel canceled the pending job');
select is(:'h2_canceled_again'::text, 'f', 'and refused to cancel it twice');
select is(:purged::int, 0, 'purge deleted nothing young');
select results_eq($$ select step, sqlstate from public.hijack_answer order by step $$,
    $$ values ('claim from a topic only in pg_temp.topic'::text, '42704'::text),
              ('declare_topic with an invalid name', '22023'),
              ('enqueue at infinity', '22023'),
              ('enqueue of an oversize payload', '54000'),
              ('enqueue to a topic only in pg_temp.topic', '42704'),
              ('enqueue with a 300-character key', '22023'),
              ('enqueue_many with keys of another length', '22023'),
              ('pause a topic only in pg_temp.topic', '42704'),
              ('settle with an unknown outcome', '22023') $$,
    'every bad call failed with its documented SQLSTATE despite the shadows');
select is((select count(*)::int from brooq.topic where name !~ '^[a-z0-9._-]{1,128}$'), 0, 'no invalid topic name was stored');

-- why the calls were safe: the pinned path puts pg_catalog first and pg_temp last
-- (functions and operators are never looked up in pg_temp; tables are, so it
-- must come last), and every brooq object is schema-qualified
select is((select count(*)::int from pg_proc p where p.pronamespace = 'brooq'::regnamespace and p.prosecdef
            and p.proconfig[1] is distinct from 'search_path=pg_catalog, pg_temp'), 0,
    'every SECURITY DEFINER function pins search_path = pg_catalog, pg_temp (pg_temp last)');

-- The private helpers that keep the caller's path are not SECURITY DEFINER:
-- called directly under the trap they run with the caller's rights only.
select is((select count(*)::int from pg_proc p where p.pronamespace = 'brooq'::regnamespace and p.prosecdef and p.proconfig is null), 0,
    'no SECURITY DEFINER function runs with the caller''s search_path');

-- Privileges: the trap did not widen anything
set local role brooq_producer;
select throws_ok($$ select * from brooq.job $$, '42501', 'permission denied for table job', 'brooq_producer still cannot read brooq.job');
reset role;
set local role brooq_worker;
select throws_ok($$ select brooq.cancel(1) $$, '42501', 'permission denied for function cancel', 'brooq_worker still cannot cancel');
reset role;

select * from finish();
rollback;
