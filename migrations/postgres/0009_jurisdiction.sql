-- Where a project is built and which code applies there: the job-site location (USPS state
-- code, optional county and city), the permit date (NULL: today) and the team's edition
-- override (NULL: the adoption table decides).
ALTER TABLE projects
    ADD COLUMN site_state TEXT CHECK (site_state ~ '^[A-Z]{2}$'),
    ADD COLUMN site_county TEXT CHECK (btrim(site_county) <> ''),
    ADD COLUMN site_city TEXT CHECK (btrim(site_city) <> ''),
    ADD COLUMN permit_date TEXT CHECK (permit_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    ADD COLUMN edition_override INTEGER CHECK (edition_override BETWEEN 2000 AND 2100);

-- Local amendment documents are filed under a jurisdiction ("WA", "WA/Seattle"); NULL is the
-- model code or a team's own documents.
ALTER TABLE documents ADD COLUMN jurisdiction TEXT CHECK (btrim(jurisdiction) <> '');
CREATE INDEX documents_jurisdiction ON documents (jurisdiction) WHERE jurisdiction IS NOT NULL;
