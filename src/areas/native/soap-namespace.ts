/**
 * The XML namespace of the native API's SOAP service (`/api/soap`): the WSDL's targetNamespace, the
 * namespace of each method's request and response element, and the base of its SOAPAction. One
 * constant shared by the SOAP transport and the `/reference/api` page, so the page's example
 * envelopes are the ones the service accepts. No Inedo WSDL was found to copy a namespace from
 * (research/next-areas.md 2.5), so this is an ASMX-style URI of our choosing.
 */
export const SOAP_NAMESPACE = "http://inedo.com/";

/** The SOAPAction of a method (SOAP 1.1 header, SOAP 1.2 `action` parameter), ASMX style: namespace + method name. */
export function soapActionOf(methodName: string): string {
  return SOAP_NAMESPACE.endsWith("/") ? `${SOAP_NAMESPACE}${methodName}` : `${SOAP_NAMESPACE}/${methodName}`;
}
