-- Every change to a project's rows bumps its revision in the same transaction, whoever makes
-- it (an applied plan, a direct edit, an import, a delete that cascades). A reader that kept
-- a copy of the project checks the revision, one indexed row, instead of reading ten tables.
ALTER TABLE projects ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

-- The project's own row: any update that did not bump the revision itself does so here
-- (recursive triggers are off, so this update does not fire it again).
CREATE TRIGGER projects_revised AFTER UPDATE ON projects WHEN NEW.revision = OLD.revision
BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.id; END;

CREATE TRIGGER services_inserted AFTER INSERT ON services BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER services_updated AFTER UPDATE ON services BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER services_deleted AFTER DELETE ON services BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER panels_inserted AFTER INSERT ON panels BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER panels_updated AFTER UPDATE ON panels BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER panels_deleted AFTER DELETE ON panels BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER circuits_inserted AFTER INSERT ON circuits BEGIN UPDATE projects SET revision = revision + 1 WHERE id = (SELECT project_id FROM panels WHERE id = NEW.panel_id); END;
CREATE TRIGGER circuits_updated AFTER UPDATE ON circuits BEGIN UPDATE projects SET revision = revision + 1 WHERE id = (SELECT project_id FROM panels WHERE id = OLD.panel_id); UPDATE projects SET revision = revision + 1 WHERE id = (SELECT project_id FROM panels WHERE id = NEW.panel_id); END;
CREATE TRIGGER circuits_deleted AFTER DELETE ON circuits BEGIN UPDATE projects SET revision = revision + 1 WHERE id = (SELECT project_id FROM panels WHERE id = OLD.panel_id); END;
CREATE TRIGGER feeders_inserted AFTER INSERT ON feeders BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER feeders_updated AFTER UPDATE ON feeders BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER feeders_deleted AFTER DELETE ON feeders BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER transformers_inserted AFTER INSERT ON transformers BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER transformers_updated AFTER UPDATE ON transformers BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER transformers_deleted AFTER DELETE ON transformers BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER load_items_inserted AFTER INSERT ON load_items BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER load_items_updated AFTER UPDATE ON load_items BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER load_items_deleted AFTER DELETE ON load_items BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER charging_sources_inserted AFTER INSERT ON charging_sources BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER charging_sources_updated AFTER UPDATE ON charging_sources BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER charging_sources_deleted AFTER DELETE ON charging_sources BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
CREATE TRIGGER tasks_inserted AFTER INSERT ON tasks BEGIN UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER tasks_updated AFTER UPDATE ON tasks BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; UPDATE projects SET revision = revision + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks BEGIN UPDATE projects SET revision = revision + 1 WHERE id = OLD.project_id; END;
