-- Every change to a project's rows bumps its revision in the same transaction, whoever makes
-- it (an applied plan, a direct edit, an import, a delete that cascades). A reader that kept
-- a copy of the project checks the revision, one indexed row, instead of reading ten tables.
ALTER TABLE projects ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION sparky_project_revised() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION sparky_circuit_revised() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE projects SET revision = revision + 1
        WHERE id = (SELECT project_id FROM panels WHERE id = OLD.panel_id);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE projects SET revision = revision + 1
        WHERE id = (SELECT project_id FROM panels WHERE id = NEW.panel_id);
    END IF;
    RETURN NULL;
END $$;

-- The project's own row: any update that did not bump the revision itself does so here.
CREATE FUNCTION sparky_project_row_revised() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.revision = OLD.revision THEN
        NEW.revision := OLD.revision + 1;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER projects_revised BEFORE UPDATE ON projects
    FOR EACH ROW EXECUTE FUNCTION sparky_project_row_revised();
CREATE TRIGGER services_revised AFTER INSERT OR UPDATE OR DELETE ON services
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER panels_revised AFTER INSERT OR UPDATE OR DELETE ON panels
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER circuits_revised AFTER INSERT OR UPDATE OR DELETE ON circuits
    FOR EACH ROW EXECUTE FUNCTION sparky_circuit_revised();
CREATE TRIGGER feeders_revised AFTER INSERT OR UPDATE OR DELETE ON feeders
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER transformers_revised AFTER INSERT OR UPDATE OR DELETE ON transformers
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER load_items_revised AFTER INSERT OR UPDATE OR DELETE ON load_items
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER charging_sources_revised AFTER INSERT OR UPDATE OR DELETE ON charging_sources
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
CREATE TRIGGER tasks_revised AFTER INSERT OR UPDATE OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION sparky_project_revised();
