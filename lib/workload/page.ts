/**
 * The page a Website serves and the nginx configuration that serves it. Pure functions: the
 * WebsiteWorkload construct puts their output into the pod, and tests run the same files locally.
 */
import { COLOR_PATTERN } from '../website/schema.ts';

/** Port the web server listens on inside the pod (unprivileged: above 1024). */
export const WEB_PORT = 8080;

// Compiled once: renderPage runs for every Website the operator renders.
const COLOR = new RegExp(COLOR_PATTERN);

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/**
 * Linear-light value (0 to 1) of one sRGB channel byte, the first step of WCAG relative luminance.
 * The shell operator ships these 256 values precomputed, so its choice of text colour is the same
 * arithmetic as textColorOn's, bit for bit.
 */
export function linearChannel(byte: number): number {
  const c = byte / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** Black or white, whichever reads better on `color` (WCAG relative luminance). */
export function textColorOn(color: string): '#000000' | '#ffffff' {
  const hex = color.length === 4 ? color.slice(1).replace(/./g, (c) => c + c) : color.slice(1);
  const [r, g, b] = [0, 2, 4].map((i) => linearChannel(parseInt(hex.slice(i, i + 2), 16)));
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  // Contrast against white is (1.05)/(L+0.05), against black (L+0.05)/0.05: pick the larger.
  return 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 ? '#ffffff' : '#000000';
}

/**
 * The HTML page: the title, escaped, on the colour. Newlines and spaces in the title show as typed.
 * Throws on a colour that is not a CSS hex colour: it is written into a style sheet.
 */
export function renderPage(title: string, color: string): string {
  if (!COLOR.test(color)) {
    throw new Error(`color must be a CSS hex colour such as #2196F3, got ${JSON.stringify(color)}`);
  }
  return pageHtml({ text: escapeHtml(title), background: color, foreground: textColorOn(color) });
}

/** What the page shows, ready to insert: renderPage escapes and validates, pageHtml only places. */
export interface PageFields {
  /** The title, already HTML-escaped. */
  readonly text: string;
  /** Background colour, a validated CSS hex colour. */
  readonly background: string;
  /** Text colour on that background. */
  readonly foreground: string;
}

/** The page around fields that are already escaped and validated; use renderPage for a title. */
export function pageHtml({ text, background, foreground }: PageFields): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${text}</title>`,
    '<style>',
    'html, body { margin: 0; height: 100%; }',
    `body { background: ${background}; color: ${foreground}; font-family: system-ui, sans-serif;`,
    '  display: flex; align-items: center; justify-content: center; }',
    'h1 { margin: 1rem; text-align: center; white-space: pre-wrap; overflow-wrap: anywhere; }',
    '</style>',
    '</head>',
    '<body>',
    `<h1 id="title">${text}</h1>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * nginx configuration, with every path relative to nginx's prefix (`-p`), so the pod and a local
 * test run the same file. Logs go to the container's stdout and stderr.
 */
export function renderNginxConfig(port: number = WEB_PORT): string {
  return [
    'worker_processes 1;',
    'pid nginx.pid;',
    'error_log stderr warn;',
    'events { worker_connections 256; }',
    'http {',
    '  access_log /dev/stdout;',
    '  client_body_temp_path tmp/client_body;',
    '  proxy_temp_path tmp/proxy;',
    '  fastcgi_temp_path tmp/fastcgi;',
    '  uwsgi_temp_path tmp/uwsgi;',
    '  scgi_temp_path tmp/scgi;',
    '  server_tokens off;',
    '  server {',
    `    listen ${port};`,
    '    root html;',
    '    charset utf-8;',
    '    add_header X-Content-Type-Options nosniff always;',
    "    add_header Content-Security-Policy \"default-src 'none'; style-src 'unsafe-inline'\" always;",
    '    location = / { default_type text/html; try_files /index.html =404; }',
    '    location / { return 404; }',
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * The container's entry point: writes the page and configuration from the environment into the
 * writable site directory and hands over to nginx. Values are only ever expanded inside double
 * quotes, never evaluated, so a title like `$(touch /tmp/pwned)` stays text.
 */
export const START_SCRIPT = [
  'set -eu',
  'mkdir -p "$SITE_DIR/html" "$SITE_DIR/tmp"',
  'printf "%s" "$WEBSITE_HTML" > "$SITE_DIR/html/index.html"',
  'printf "%s" "$NGINX_CONF" > "$SITE_DIR/nginx.conf"',
  'exec nginx -p "$SITE_DIR/" -c "$SITE_DIR/nginx.conf" -e stderr -g "daemon off;"',
].join('\n');
