// The admin area lives in ./admin/ (one file per panel); this module stays its entry point.
export { AdminPage } from './admin/index.tsx'
