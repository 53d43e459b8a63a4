-- Per-company DIAN web-service settings in the fiscal profile (docs/dian-webservice.md):
-- {"endpoint": "habilitacion"|"produccion"|URL, "mode": "sync"|"async"|"test_set", "test_set_id": text|null, "timeout_ms": int}.
-- NULL = the defaults (see DEFAULT_DIAN_SETTINGS in src/modules/fiscal/dian-settings.ts).
ALTER TABLE fiscal_profiles ADD COLUMN dian jsonb;
