// Swagger UI on this server's OpenAPI document (openapi.json, beside /docs).
// validatorUrl null: the default would show a badge fetched from the Swagger validator's
// site, and this page fetches from this server only.
window.addEventListener("load", function () {
  "use strict";
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
