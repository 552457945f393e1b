/** What every admin panel gets: turns a failure into a message (and ends the session on a 401). */
export type PanelProps = { onFailure: (err: unknown) => string }
