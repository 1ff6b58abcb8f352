// pgutil's face of the universal feed area shares /upack's route pieces; only its tag differs.
export { errors, errorText, feedNeed, feedOf } from "../http.js";
export { queryDoc } from "../../../http/query-doc.js";

export const TAGS = ["common packages API"];
