-- Revert brooq_proxy:roles from pg

begin;

-- Roles are cluster-wide: another database may still use them. Drop what can
-- be dropped and leave the others with a notice.
do $$
declare
    r text;
begin
    foreach r in array array['brooq_admin', 'brooq_worker', 'brooq_producer'] loop
        begin
            execute format('drop role if exists %I', r);
        exception when dependent_objects_still_exist then
            raise notice 'role % is still used elsewhere; kept', r;
        end;
    end loop;
end
$$;

commit;
