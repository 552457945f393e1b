-- Runs once, when the postgres container initialises an empty data directory
-- (mounted into /docker-entrypoint-initdb.d by docker-compose.yml), connected to POSTGRES_DB.
--
-- It creates no tables and no schemas: each app creates its own schema (design_archive,
-- key_info, dns_manager, pickup_share) with its migrations when it starts.
--
-- Quartet keeps every timestamp in UTC; make that the database default too, so that ad-hoc
-- psql sessions and any now()::date agree with the apps.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET timezone TO %L', current_database(), 'UTC');
END
$$;
