-- Where a project is built and which code applies there: the job-site location (USPS state
-- code, optional county and city), the permit date (NULL: today) and the team's edition
-- override (NULL: the adoption table decides).
ALTER TABLE projects ADD COLUMN site_state TEXT
    CHECK (site_state GLOB '[A-Z][A-Z]' AND length(site_state) = 2);
ALTER TABLE projects ADD COLUMN site_county TEXT CHECK (trim(site_county) <> '');
ALTER TABLE projects ADD COLUMN site_city TEXT CHECK (trim(site_city) <> '');
ALTER TABLE projects ADD COLUMN permit_date TEXT
    CHECK (permit_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]');
ALTER TABLE projects ADD COLUMN edition_override INTEGER
    CHECK (edition_override BETWEEN 2000 AND 2100);

-- Local amendment documents are filed under a jurisdiction ("WA", "WA/Seattle"); NULL is the
-- model code or a team's own documents.
ALTER TABLE documents ADD COLUMN jurisdiction TEXT CHECK (trim(jurisdiction) <> '');
CREATE INDEX documents_jurisdiction ON documents (jurisdiction) WHERE jurisdiction IS NOT NULL;
