-- What each user is playing, from social's social.activity.updated events (shown in member lists).
-- `version` is the occurredAt of the event applied last, so a late older event changes nothing.
CREATE TABLE activities (
  user_id uuid PRIMARY KEY,
  game_id uuid,
  name text,
  started_at timestamptz,
  version timestamptz NOT NULL
);
