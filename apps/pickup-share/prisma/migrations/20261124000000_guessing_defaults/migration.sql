-- Pickup codes grow from 8 to 12 digits and the global failure budget drops from 1000 to 600 per
-- window (README "Guessing" has the arithmetic). The site settings row holds every field once an
-- admin has saved the settings, so a row still carrying an old default takes the new one; a value
-- an admin chose otherwise stays. Codes already issued keep working whatever their length.
UPDATE "setting"
SET "value" = jsonb_set("value", '{codeLength}', '12'), "updated_at" = CURRENT_TIMESTAMP
WHERE "key" = 'site' AND "value"->'codeLength' = '8'::jsonb;

UPDATE "setting"
SET "value" = jsonb_set("value", '{takeFailuresGlobal}', '600'), "updated_at" = CURRENT_TIMESTAMP
WHERE "key" = 'site' AND "value"->'takeFailuresGlobal' = '1000'::jsonb;
