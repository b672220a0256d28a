-- E2EE key distribution (X3DH-style prekeys). Public keys only, as raw bytes; the server never
-- holds a private key.
CREATE TABLE key_devices (
  user_id uuid NOT NULL,
  -- The client's own name for the device.
  device_id text NOT NULL,
  identity_key bytea NOT NULL,
  signed_prekey_id integer NOT NULL,
  signed_prekey bytea NOT NULL,
  signed_prekey_signature bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, device_id)
);

-- Each row is handed out once: a claim deletes the row it returns (DELETE ... RETURNING over rows
-- locked with SKIP LOCKED), so racing claims never share a key.
CREATE TABLE one_time_keys (
  user_id uuid NOT NULL,
  device_id text NOT NULL,
  key_id integer NOT NULL,
  public_key bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, device_id, key_id),
  FOREIGN KEY (user_id, device_id) REFERENCES key_devices (user_id, device_id) ON DELETE CASCADE
);

-- Fixed-window counter of bundle fetches per caller (so nobody drains another's one-time keys).
CREATE TABLE key_fetch_windows (
  caller_id uuid PRIMARY KEY,
  window_started_at timestamptz NOT NULL,
  fetches integer NOT NULL
);
