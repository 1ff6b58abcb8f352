import { XMLBuilder } from "fast-xml-parser";
import type { NativeMethod, NativeRegistry, NativeType } from "./registry.js";
import { SOAP_NAMESPACE, soapActionOf } from "./soap-namespace.js";
import { ROW_ELEMENT, resultShapeOf, type Shape } from "./soap-shapes.js";

/**
 * The WSDL 1.1 description of `/api/soap`, generated from the native method registry: document/literal
 * wrapped like an ASMX service (each method a `<Method>` request element and a `<Method>Response`
 * holding `<Method>Result`), the API key as first element (`API_Key`), then the method's parameters
 * (integer xs:int, string xs:string, indicator xs:boolean; optional ones minOccurs=0), the result
 * typed from the method's zod schema (soap-shapes.ts), one SOAP 1.1 and one SOAP 1.2 binding.
 */

export const SERVICE_NAME = "NativeApi";
/** The element carrying the key in every request, before the method's own parameters. */
export const KEY_ELEMENT = "API_Key";

const WSDL = "http://schemas.xmlsoap.org/wsdl/";
const WSDL_SOAP11 = "http://schemas.xmlsoap.org/wsdl/soap/";
const WSDL_SOAP12 = "http://schemas.xmlsoap.org/wsdl/soap12/";
const XSD = "http://www.w3.org/2001/XMLSchema";
const SOAP_HTTP = "http://schemas.xmlsoap.org/soap/http";

const PARAMETER_TYPES: Readonly<Record<NativeType, string>> = {
  integer: "xs:int",
  string: "xs:string",
  indicator: "xs:boolean",
};

type Node = Record<string, unknown>;

const builder = new XMLBuilder({
  ignoreAttributes: false,
  suppressBooleanAttributes: false,
  suppressEmptyNode: true,
  format: true,
  indentBy: "  ",
});

/** Stands for the service address while the document is built once; each request puts its own in. */
const LOCATION = "urn:wharf:soap-location";

/**
 * A function from the service's address (`<base URL>/api/soap`) to the WSDL text. The document is
 * built on first use and kept: the registry does not change while the server runs.
 */
export function wsdlWriter(registry: NativeRegistry): (location: string) => string {
  let template: string | undefined;
  return (location) => {
    template ??= buildWsdl(registry.methods);
    return template.replaceAll(LOCATION, escapeAttribute(location));
  };
}

function buildWsdl(methods: readonly NativeMethod[]): string {
  const definitions: Node = {
    "@_xmlns:wsdl": WSDL,
    "@_xmlns:soap": WSDL_SOAP11,
    "@_xmlns:soap12": WSDL_SOAP12,
    "@_xmlns:xs": XSD,
    "@_xmlns:tns": SOAP_NAMESPACE,
    "@_targetNamespace": SOAP_NAMESPACE,
    "wsdl:documentation":
      "Wharf native API: every method of /api/json/<Method>, with the API key as first argument. " +
      "Method and argument names match case-insensitively; see /reference/api.",
    "wsdl:types": {
      "xs:schema": {
        "@_elementFormDefault": "qualified",
        "@_targetNamespace": SOAP_NAMESPACE,
        "xs:element": methods.flatMap((method) => [requestElement(method), responseElement(method)]),
      },
    },
    "wsdl:message": methods.flatMap((method) => [
      message(`${method.name}SoapIn`, method.name),
      message(`${method.name}SoapOut`, `${method.name}Response`),
    ]),
    "wsdl:portType": {
      "@_name": `${SERVICE_NAME}Soap`,
      "wsdl:operation": methods.map((method) => ({
        "@_name": method.name,
        "wsdl:documentation": `${method.summary} Needs ${method.attribute} (a System key: the native scope).`,
        "wsdl:input": { "@_message": `tns:${method.name}SoapIn` },
        "wsdl:output": { "@_message": `tns:${method.name}SoapOut` },
      })),
    },
    "wsdl:binding": [
      binding("soap", `${SERVICE_NAME}Soap`, methods),
      binding("soap12", `${SERVICE_NAME}Soap12`, methods),
    ],
    "wsdl:service": {
      "@_name": SERVICE_NAME,
      "wsdl:port": [
        {
          "@_name": `${SERVICE_NAME}Soap`,
          "@_binding": `tns:${SERVICE_NAME}Soap`,
          "soap:address": { "@_location": LOCATION },
        },
        {
          "@_name": `${SERVICE_NAME}Soap12`,
          "@_binding": `tns:${SERVICE_NAME}Soap12`,
          "soap12:address": { "@_location": LOCATION },
        },
      ],
    },
  };
  return `<?xml version="1.0" encoding="utf-8"?>\n${builder.build({ "wsdl:definitions": definitions })}`;
}

function requestElement(method: NativeMethod): Node {
  const key = element(KEY_ELEMENT, 0, "1", {
    "@_type": "xs:string",
    ...documented("API key (or send it in the X-ApiKey header)"),
  });
  const parameters = method.parameters.map((parameter) =>
    element(parameter.name, parameter.required ? 1 : 0, "1", {
      "@_type": PARAMETER_TYPES[parameter.type],
      ...(!parameter.required && { "@_nillable": "true" }),
      ...documented(parameter.description),
    }),
  );
  return { "@_name": method.name, "xs:complexType": { "xs:sequence": { "xs:element": [key, ...parameters] } } };
}

function responseElement(method: NativeMethod): Node {
  const shape = resultShapeOf(method);
  const result = shape === undefined ? [] : [declaration(`${method.name}Result`, shape, 0, "1", false)];
  return {
    "@_name": `${method.name}Response`,
    "xs:complexType": result.length === 0 ? "" : { "xs:sequence": { "xs:element": result } },
  };
}

/** An element declaration of `shape`: a built-in type, a restriction (enumerations) or an inline complex type. */
function declaration(name: string, shape: Shape, minOccurs: 0 | 1, maxOccurs: string, nillable: boolean): Node {
  const extra: Node = nillable ? { "@_nillable": "true" } : {};
  switch (shape.kind) {
    case "scalar":
      if (shape.values === undefined)
        return element(name, minOccurs, maxOccurs, { "@_type": `xs:${shape.xsd}`, ...extra });
      return element(name, minOccurs, maxOccurs, {
        ...extra,
        "xs:simpleType": {
          "xs:restriction": {
            "@_base": "xs:string",
            "xs:enumeration": shape.values.map((value) => ({ "@_value": value })),
          },
        },
      });
    case "any":
      return element(name, minOccurs, maxOccurs, { "@_type": "xs:string", ...extra });
    case "object":
      return element(name, minOccurs, maxOccurs, {
        ...extra,
        "xs:complexType": sequence(
          shape.fields.map((f) => declaration(f.element, f.shape, f.required ? 1 : 0, "1", f.nillable)),
        ),
      });
    case "array":
      return element(name, minOccurs, maxOccurs, {
        ...extra,
        "xs:complexType": sequence([declaration(ROW_ELEMENT, shape.row, 0, "unbounded", shape.nillableRows)]),
      });
    case "map": {
      const entry = sequence([
        element("Key", 1, "1", { "@_type": "xs:string" }),
        declaration("Value", shape.value, 0, "1", true),
      ]);
      return element(name, minOccurs, maxOccurs, {
        ...extra,
        "xs:complexType": sequence([element("Entry", 0, "unbounded", { "xs:complexType": entry })]),
      });
    }
  }
}

function sequence(elements: Node[]): Node | string {
  return elements.length === 0 ? "" : { "xs:sequence": { "xs:element": elements } };
}

function element(name: string, minOccurs: 0 | 1, maxOccurs: string, rest: Node): Node {
  return { "@_minOccurs": String(minOccurs), "@_maxOccurs": maxOccurs, "@_name": name, ...rest };
}

function documented(text: string): Node {
  return text === "" ? {} : { "xs:annotation": { "xs:documentation": text } };
}

function message(name: string, elementName: string): Node {
  return { "@_name": name, "wsdl:part": { "@_name": "parameters", "@_element": `tns:${elementName}` } };
}

function binding(prefix: "soap" | "soap12", name: string, methods: readonly NativeMethod[]): Node {
  const body = { [`${prefix}:body`]: { "@_use": "literal" } };
  return {
    "@_name": name,
    "@_type": `tns:${SERVICE_NAME}Soap`,
    [`${prefix}:binding`]: { "@_transport": SOAP_HTTP },
    "wsdl:operation": methods.map((method) => ({
      "@_name": method.name,
      [`${prefix}:operation`]: { "@_soapAction": soapActionOf(method.name), "@_style": "document" },
      "wsdl:input": body,
      "wsdl:output": body,
    })),
  };
}

function escapeAttribute(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}
